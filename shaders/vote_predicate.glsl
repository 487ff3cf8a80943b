// Run-time predicates over the element type T (xwarp::vote::Predicate): the twin of
// xw_predicate in cuda/vote.cu and cuda/compact.cu and of Predicate::eval on the CPU.
// The code and operands travel in the push constants; 64-bit operands as two words, low first.

const uint XW_PRED_EVEN = 0u;
const uint XW_PRED_ODD = 1u;
const uint XW_PRED_NONZERO = 2u;
const uint XW_PRED_GREATER = 3u;
const uint XW_PRED_LESS = 4u;
const uint XW_PRED_IN_RANGE = 5u;

// An operand from its two parameter words.
T xw_pred_operand(uint lo, uint hi) {
#if defined(XW_TYPE_I32)
    return int(lo);
#elif defined(XW_TYPE_U32)
    return lo;
#elif defined(XW_TYPE_F32)
    return uintBitsToFloat(lo);
#elif defined(XW_TYPE_I64)
    return int64_t(packUint2x32(uvec2(lo, hi)));
#elif defined(XW_TYPE_U64)
    return packUint2x32(uvec2(lo, hi));
#elif defined(XW_TYPE_F64)
    return packDouble2x32(uvec2(lo, hi));
#endif
}

#if defined(XW_T_FLOAT)
// A float is even or odd when it is an integer (finite, equal to its truncation), as that
// integer. Half of an integer of magnitude 1 or more is exact, so no rounding enters.
bool xw_is_integer(T v) { return !isinf(v) && trunc(v) == v; }
bool xw_is_even(T v) { T h = v * T(0.5); return xw_is_integer(v) && trunc(h) == h; }
bool xw_is_odd(T v) { T h = v * T(0.5); return xw_is_integer(v) && trunc(h) != h; }
#else
bool xw_is_even(T v) { return (v & T(1)) == T(0); }
bool xw_is_odd(T v) { return (v & T(1)) != T(0); }
#endif

// Whether v passes predicate `code` with operands a and b (IEEE comparisons: NaN fails all but
// nonzero).
bool xw_predicate(T v, uint code, T a, T b) {
    switch (code) {
    case XW_PRED_EVEN: return xw_is_even(v);
    case XW_PRED_ODD: return xw_is_odd(v);
    case XW_PRED_NONZERO: return v != T(0);
    case XW_PRED_GREATER: return v > a;
    case XW_PRED_LESS: return v < a;
    case XW_PRED_IN_RANGE: return a <= v && v <= b;
    }
    return false;
}
