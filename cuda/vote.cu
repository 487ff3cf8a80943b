// The warp vote family with CUDA's own intrinsics: the reference behaviour that shaders/vote.comp
// reproduces on any subgroup size.
//
// Thread t evaluates the predicate on element t; lane = t % 32. The tail lanes of a partial last
// warp really are inactive: the warp takes the mask of lanes holding an element with
// __ballot_sync, the others return, and every vote below runs with that mask. The warp's leader
// (its lowest active lane) writes the warp's record; every lane writes its exclusive rank.
//
// No variant constants: the predicate is chosen at run time by the parameter block.

struct VoteParams {
    unsigned int n;     // elements in this launch
    unsigned int pred;  // predicate code (xw_predicate)
    unsigned int a_lo;  // first operand, low and high word
    unsigned int a_hi;
    unsigned int b_lo;  // second operand (in_range's hi)
    unsigned int b_hi;
    unsigned int pad0;
    unsigned int pad1;
};

#include "predicate.cuh"

// ---- the kernel ----

// Words per warp record: ballot, any, all, active mask, popc, ffs, leader, active lanes.
#define XW_RECORD 8

extern "C" __global__ void vote(const XW_T* __restrict__ in, unsigned int* __restrict__ records,
                                unsigned int* __restrict__ ranks, VoteParams p) {
    // A block handles ROWS layers of blockDim.x elements, every load issued before the first
    // vote; each layer's warps vote as they would in a block of their own.
    const unsigned long long first = xw_group() * blockDim.x * ROWS;
    if (first >= p.n) return;
    const unsigned int lane = threadIdx.x % XW_WARP;
    const XW_T a = xw_pred_operand(p.a_lo, p.a_hi);
    const XW_T b = xw_pred_operand(p.b_lo, p.b_hi);
    XW_T v[ROWS];
#pragma unroll
    for (unsigned int r = 0; r < ROWS; ++r) {
        const unsigned long long i = first + r * blockDim.x + threadIdx.x;
        v[r] = i < p.n ? in[i] : XW_T(0);
    }
#pragma unroll
    for (unsigned int r = 0; r < ROWS; ++r) {
        const unsigned long long i = first + r * blockDim.x + threadIdx.x;
        // A warp with no element in this layer has none in the later ones either: it is done.
        if (i - lane >= p.n) return;
        // The lanes holding an element, taken while the whole warp is here; then the tail
        // leaves (only the input's last warp has one).
        const unsigned int active = __ballot_sync(XW_FULL_MASK, i < p.n);
        if (i >= p.n) return;
        const bool pass = xw_predicate(v[r], p.pred, a, b);
        const unsigned int ballot = __ballot_sync(active, pass);
        const int any_pass = __any_sync(active, pass);
        const int all_pass = __all_sync(active, pass);
        // Reconverge the active lanes so that __activemask sees all of them.
        __syncwarp(active);
        const unsigned int mask = __activemask();
        const int leader = __ffs(mask) - 1;

        ranks[i] = __popc(ballot & ((1u << lane) - 1u));
        if ((int)lane == leader) {
            unsigned int* rec = records + i / XW_WARP * XW_RECORD;
            const uint4 lo = make_uint4(ballot, any_pass != 0, all_pass != 0, mask);
            const uint4 hi = make_uint4(__popc(ballot), __ffs(ballot), leader, __popc(mask));
            // Two 16-byte stores where the records are 16-byte aligned (every record is when the
            // first is), as in the Vulkan twin; eight word stores otherwise.
            if (((size_t)records & 15) == 0) {
                reinterpret_cast<uint4*>(rec)[0] = lo;
                reinterpret_cast<uint4*>(rec)[1] = hi;
            } else {
                rec[0] = lo.x; rec[1] = lo.y; rec[2] = lo.z; rec[3] = lo.w;
                rec[4] = hi.x; rec[5] = hi.y; rec[6] = hi.z; rec[7] = hi.w;
            }
        }
    }
}
