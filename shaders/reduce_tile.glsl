// The device-reduce tile of reduce.comp (SCOPE 3) in the canonical order of src/reduce.rs; the
// twin of cuda/reduce_tile.cuh. Include after reduce_op.glsl, with `shared T stage[]` of the
// workgroup's size declared, ITEMS a constant and the workgroup size set.

#if defined(XW_TYPE_F32) && defined(XW_SUBNORMALS_EXACT)
// Exact f32 sums: the invocations 0 .. xw_tile_live - 1 of the last XW_TILE_FOLD hold elements,
// the others the identity, -0.0 (a partial tile's). A pair whose upper block holds only such
// invocations is its lower block's value as it is (x + -0.0 is x for every x): no exact sum,
// whose test fails on zeros, for the padding.
uint xw_tile_live = 0xffffffffu;
#define XW_SET_TILE_LIVE(b_, n) xw_tile_live = (n) > (b_) ? (n) - (b_) : 0u;
// The pair (lower, upper) of a tree level whose upper block starts at invocation `upper`.
T xw_pair(T lower, T upper_value, uint upper) {
    return OP == 0u && upper >= xw_tile_live ? lower : xw_op(lower, upper_value);
}
#else
#define XW_SET_TILE_LIVE(b_, n)
T xw_pair(T lower, T upper_value, uint upper) { return xw_op(lower, upper_value); }
#endif

// The xor butterfly over aligned blocks of `span` invocations (32 or the workgroup): levels
// below the subgroup size shuffle, the others go through shared memory. Call in uniform
// control flow.
T butterfly(T v, uint local, uint span) {
#if defined(XW_TYPE_F32) && defined(XW_SUBNORMALS_EXACT)
    if (xw_tile_live >= gl_WorkGroupSize.x) {
        // A whole tile: the loop without the padding's test.
        for (uint s = 1u; s < span; s <<= 1u) {
            T o;
            if (s < gl_SubgroupSize) {
                o = xw_shuffle_xor(v, s);
            } else {
                stage[local] = v;
                barrier();
                o = stage[local ^ s];
                barrier();
            }
            v = (local & s) == 0u ? xw_op(v, o) : xw_op(o, v);
        }
        return v;
    }
#endif
    for (uint s = 1u; s < span; s <<= 1u) {
        T o;
        if (s < gl_SubgroupSize) {
            o = xw_shuffle_xor(v, s);
        } else {
            stage[local] = v;
            barrier();
            o = stage[local ^ s];
            barrier();
        }
        uint upper = (local & ~(2u * s - 1u)) + s;
        v = (local & s) == 0u ? xw_pair(v, o, upper) : xw_pair(o, v, upper);
    }
    return v;
}

// Whether f32 min and max fold a thread's run as integer keys (float_ops.glsl: the same bits
// as the fold of xw_min or xw_max; not where the kernels flush, SUBNORMALS 2), and reduce the
// workgroup's values the same way (xw_key_total).
#if defined(XW_TYPE_F32)
const bool XW_KEY_FOLD = (OP == 2u || OP == 3u) && SUBNORMALS != 2u;

// The subgroups' least keys (xw_key_total).
shared uint xw_key_stage[gl_WorkGroupSize.x];

// Invocation 0's result of block_total for f32 min and max (XW_KEY_FOLD), by integer minima
// instead of the tree's float operations. The tree's total is the value of the least min key
// (greatest max key) among the invocations' non-NaN values, whatever the tree's shape (keys
// are a bijection of the bits), and where every value is NaN the last invocation's (a NaN `a`
// yields `b`, and the lower block is always on the left). So each invocation offers one
// integer: its min key, or its max key complemented, so that the least wins for both; for a
// NaN, 0xffffffff - local, above every non-NaN key (XW_MIN_KEY_NAN and the complement of
// XW_MAX_KEY_NAN are lower) and least for the last NaN. A NaN's bits come from the invocation
// that held it, through `stage`. Call in uniform control flow.
T xw_key_total(T v, uint local) {
    uint sg = gl_SubgroupSize;
    uint subgroups = gl_WorkGroupSize.x / sg;
    uint key = xw_isnan(v) ? 0xffffffffu - local : (OP == 2u ? xw_min_key(v) : ~xw_max_key(v));
    for (uint s = 1u; s < sg; s <<= 1u) key = min(key, subgroupShuffleXor(key, s));
    stage[local] = v;
    if (local % sg == 0u) xw_key_stage[local / sg] = key;
    barrier();
    T result = v;
    if (local < sg) {
        // The whole first subgroup is here, so its shuffles are defined.
        for (uint i = local; i < subgroups; i += sg) key = min(key, xw_key_stage[i]);
        for (uint s = 1u; s < sg; s <<= 1u) key = min(key, subgroupShuffleXor(key, s));
        if (key > 0xffffffffu - gl_WorkGroupSize.x) {
            result = stage[0xffffffffu - key];
        } else {
            result = OP == 2u ? xw_from_min_key(key) : xw_from_max_key(~key);
        }
    }
    return result;
}
#else
const bool XW_KEY_FOLD = false;
#endif

// Invocation 0's result of butterfly(v, local, gl_WorkGroupSize.x), the workgroup's total, with
// one barrier where the subgroups' totals fit in one subgroup: the levels below the subgroup
// size by shuffles, then the first subgroup combines the subgroup totals by the same pairwise
// tree (lower block always on the left), so the bits are the same. Other invocations' results
// are unspecified. Call in uniform control flow.
T block_total(T v, uint local) {
#if defined(XW_TYPE_F32)
    if (XW_KEY_FOLD) return xw_key_total(v, local);
#endif
    uint sg = gl_SubgroupSize;
    uint subgroups = gl_WorkGroupSize.x / sg;
    if (subgroups > sg) return butterfly(v, local, gl_WorkGroupSize.x);
    v = butterfly(v, local, sg);
    if (local % sg == 0u) stage[local / sg] = v;
    barrier();
    if (local < sg) {
        // The whole first subgroup is here, so its shuffles are defined.
        v = local < subgroups ? stage[local] : v;
        for (uint s = 1u; s < subgroups; s <<= 1u) {
            T o = xw_shuffle_xor(v, s);
            // (The test is two instructions a level on the subgroups' few totals.)
            uint upper = ((local & ~(2u * s - 1u)) + s) * sg;
            v = (local & s) == 0u ? xw_pair(v, o, upper) : xw_pair(o, v, upper);
        }
    }
    return v;
}

// acc = the fold of x_[0] .. x_[ITEMS - 1] onto acc, in order. Exact f32 sums (SUBNORMALS 1)
// are taken natively with their tests beside (xw_sum_fast) and folded again exactly where one
// failed; f32 min and max fold keys, one integer min or max an element.
#if defined(XW_TYPE_F32)
#define XW_FOLD_ITEMS(acc, x_)                                                               \
    if (XW_KEY_FOLD) {                                                                       \
        uint m_ = OP == 2u ? 0xffffffffu : 0u;                                               \
        [[unroll]] for (uint k_ = 0u; k_ < ITEMS; ++k_) {                                    \
            m_ = OP == 2u ? min(m_, xw_min_key(x_[k_])) : max(m_, xw_max_key(x_[k_]));       \
        }                                                                                    \
        bool nan_ = OP == 2u ? m_ >= XW_MIN_KEY_NAN : m_ <= XW_MAX_KEY_NAN;                  \
        T r_ = OP == 2u ? xw_from_min_key(m_) : xw_from_max_key(m_);                         \
        acc = xw_op(acc, nan_ ? x_[ITEMS - 1u] : r_);                                        \
    } else if (OP == 0u && SUBNORMALS == 1u) {                                               \
        bool slow_ = false;                                                                  \
        T a_ = acc;                                                                          \
        [[unroll]] for (uint k_ = 0u; k_ < ITEMS; ++k_) a_ = xw_sum_fast(a_, x_[k_], slow_); \
        if (slow_) {                                                                         \
            a_ = acc;                                                                        \
            [[unroll]] for (uint k_ = 0u; k_ < ITEMS; ++k_) a_ = xw_op(a_, x_[k_]);          \
        }                                                                                    \
        acc = a_;                                                                            \
    } else {                                                                                 \
        [[unroll]] for (uint k_ = 0u; k_ < ITEMS; ++k_) acc = xw_op(acc, x_[k_]);            \
    }
#else
#define XW_FOLD_ITEMS(acc, x_)                                                               \
    [[unroll]] for (uint k_ = 0u; k_ < ITEMS; ++k_) acc = xw_op(acc, x_[k_]);
#endif

// The part of a partial tile an invocation folds (XW_TILE_FOLD). Where the operator allows it
// (XW_BATCH_PARTIAL), in one batch like a whole tile's (XW_FOLD_ITEMS), every load issued
// before the first fold and none out of bounds: the invocation's missing elements are loads of
// its last element again, which a fold of min, max, and or or does not change (a NaN run's
// result, its last element, included), and for the other operators are then replaced by the
// identity, whose fold changes nothing either: integers wrap exactly, and exact f32 sums
// (SUBNORMALS 1) add -0.0, for which x + -0.0 is x for every x. Native float sums and products
// skip them instead (a NaN's bits through the driver's add are the driver's).
const bool XW_IDEMPOTENT = OP >= 2u && OP <= 5u;
#if defined(XW_TYPE_F32) && defined(XW_SUBNORMALS_EXACT)
const bool XW_BATCH_PARTIAL = OP != 1u;
#elif defined(XW_T_FLOAT)
const bool XW_BATCH_PARTIAL = OP == 2u || OP == 3u;
#else
const bool XW_BATCH_PARTIAL = true;
#endif
#define XW_PARTIAL_FOLD(acc, ARRAY, b_, block_, local_, n)                                   \
    if (XW_BATCH_PARTIAL) {                                                                  \
        /* An invocation past the end holds no element: acc stays as it is. */               \
        if (b_ + local_ < (n)) {                                                             \
            uint last_ = min(ITEMS - 1u, ((n) - b_ - local_ - 1u) / block_);                 \
            T x_[ITEMS];                                                                     \
            [[unroll]] for (uint k_ = 0u; k_ < ITEMS; ++k_) {                                \
                x_[k_] = ARRAY[b_ + min(k_, last_) * block_ + local_];                       \
                if (!XW_IDEMPOTENT && k_ > last_) x_[k_] = xw_identity();                    \
            }                                                                                \
            XW_FOLD_ITEMS(acc, x_);                                                          \
        }                                                                                    \
    } else {                                                                                 \
        [[unroll]] for (uint k_ = 0u; k_ < ITEMS; ++k_) {                                    \
            uint i_ = b_ + k_ * block_ + local_;                                             \
            if (i_ < (n)) acc = xw_op(acc, ARRAY[i_]);                                       \
        }                                                                                    \
    }

// acc = the fold, in order, of ARRAY[base + k * block + local] for k = 0 .. ITEMS-1 (elements at
// or past n skipped): each invocation's part of the tile starting at `base`. A whole tile issues
// every load before the first fold.
#define XW_TILE_FOLD(acc, ARRAY, base, n)                                                   \
    {                                                                                        \
        uint b_ = (base);                                                                    \
        uint block_ = gl_WorkGroupSize.x;                                                    \
        uint local_ = xw_local();                                                            \
        XW_SET_TILE_LIVE(b_, n)                                                              \
        if (b_ + block_ * ITEMS <= (n)) {                                                    \
            T x_[ITEMS];                                                                     \
            [[unroll]] for (uint k_ = 0u; k_ < ITEMS; ++k_)                                  \
                x_[k_] = ARRAY[b_ + k_ * block_ + local_];                                   \
            XW_FOLD_ITEMS(acc, x_);                                                          \
        } else {                                                                             \
            XW_PARTIAL_FOLD(acc, ARRAY, b_, block_, local_, n)                               \
        }                                                                                    \
    }
