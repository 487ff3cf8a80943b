// Subgroup shuffles of the element type T. 64-bit values move as two 32-bit halves, as CUDA
// moves them, so no 64-bit subgroup extension is needed.
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_KHR_shader_subgroup_shuffle_relative : require

#if defined(XW_TYPE_I64) || defined(XW_TYPE_U64)
uvec2 xw_bits(T v) { return unpackUint2x32(uint64_t(v)); }
T xw_from_bits(uvec2 b) { return T(packUint2x32(b)); }
#elif defined(XW_TYPE_F64)
uvec2 xw_bits(T v) { return unpackDouble2x32(v); }
T xw_from_bits(uvec2 b) { return packDouble2x32(b); }
#else
T xw_bits(T v) { return v; }
T xw_from_bits(T b) { return b; }
#endif

T xw_shuffle(T v, uint lane) { return xw_from_bits(subgroupShuffle(xw_bits(v), lane)); }
T xw_shuffle_xor(T v, uint mask) { return xw_from_bits(subgroupShuffleXor(xw_bits(v), mask)); }
T xw_shuffle_up(T v, uint delta) { return xw_from_bits(subgroupShuffleUp(xw_bits(v), delta)); }
T xw_shuffle_down(T v, uint delta) { return xw_from_bits(subgroupShuffleDown(xw_bits(v), delta)); }
