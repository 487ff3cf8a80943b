#!/usr/bin/env python3
"""Writes a copy of cuda/scan_device.cu with per-tile globaltimer stamps for scan_trace.cu.

usage: trace_patch.py ../../cuda/scan_device.cu scan_traced.cu

Each tile k records in xv_trace[8k ..]: its start (after the ticket), the end of its local
scan (before the look-back), the end of its look-back, its end, its polls, its windows and
whether the first window ended the look-back (then 1 + the offset of the inclusive prefix).
"""
import sys

src, dst = sys.argv[1], sys.argv[2]
s = open(src).read()


def sub(old, new):
    global s
    if old not in s:
        sys.exit(f"trace_patch: the kernel changed, cannot find: {old[:60]!r}")
    s = s.replace(old, new, 1)


sub('#define XW_LB XW_SCAN_BLOCK  // predecessors one look-back step reads: one per thread',
    '''#define XW_LB XW_SCAN_BLOCK  // predecessors one look-back step reads: one per thread
__device__ unsigned long long* xv_trace;
__device__ __forceinline__ unsigned long long xv_now() { unsigned long long t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); return t; }
__shared__ unsigned xv_polls, xv_windows, xv_path;
#define XV_STAMP(k, i) do { if (threadIdx.x == 0) xv_trace[(size_t)(k) * 8 + (i)] = xv_now(); } while (0)''')
sub('        complete = !gap;', '        complete = !gap;\n        if (i == 0) xv_polls++;')
sub('        if (!complete) reduce_missing', '        if (threadIdx.x == 0) xv_windows++;\n        if (!complete) reduce_missing')
sub('                T e = lb.values[m];', '                xv_path = m + 1;\n                T e = lb.values[m];')
sub('    const unsigned k = p.tile0 + t;',
    '''    const unsigned k = p.tile0 + t;
    if (threadIdx.x == 0) { xv_polls = 0; xv_windows = 0; xv_path = 0; xv_trace[(size_t)k * 8 + 0] = xv_now(); }''')
sub('    T e = xw_identity(T(0));\n    if (k > 0) {', '    XV_STAMP(k, 1);\n    T e = xw_identity(T(0));\n    if (k > 0) {')
sub('    const T pre = xw_op(e, prefix);', '    XV_STAMP(k, 2);\n    const T pre = xw_op(e, prefix);')
s = s.rstrip()
assert s.endswith('}')
s = s[:-1] + '''    __syncthreads();
    if (threadIdx.x == 0) { xv_trace[(size_t)k * 8 + 3] = xv_now(); xv_trace[(size_t)k * 8 + 4] = xv_polls; xv_trace[(size_t)k * 8 + 5] = xv_windows; xv_trace[(size_t)k * 8 + 6] = xv_path; }
}
'''
open(dst, 'w').write(s)
