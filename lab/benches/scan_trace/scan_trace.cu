// scan_trace: times the device scan kernel (cuda/scan_device.cu, included as KFILE) against
// CUB's InclusiveSum on the same inputs with CUDA events (median of 15, a 256 MiB L2 scrub
// before each), prints a hash of the output bits (equal hashes: bit-identical results) and, built
// with -DXV_TRACE on a copy patched by trace_patch.py, per-tile timings of the look-back.
// Build and run: see README.md in this folder. A development tool, not part of the library.
#include <cub/device/device_scan.cuh>
#include <cstdio>
#include <vector>
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <cmath>
typedef TYPE xw_elem_t;
#define XW_T xw_elem_t
#include "common.cuh"
#include KFILE
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("err %s line %d\n", cudaGetErrorString(e), __LINE__); exit(1);} } while (0)
static uint64_t sm(uint64_t& s){ uint64_t z=(s+=0x9e3779b97f4a7c15ull); z=(z^(z>>30))*0xbf58476d1ce4e5b9ull; z=(z^(z>>27))*0x94d049bb133111ebull; return z^(z>>31);}
int main(int argc, char** argv) {
  const char* name = argv[1];
  int reps = 15;
  void* scrub; size_t sb = 256u<<20; CK(cudaMalloc(&scrub, sb));
  for (int a = 2; a < argc; ++a) {
    size_t n = strtoull(argv[a], 0, 10);
    size_t tiles = (n + XW_TILE - 1) / XW_TILE;
    std::vector<T> h(n); uint64_t s = 42;
    for (size_t i = 0; i < n; ++i) { uint64_t r = sm(s); if (sizeof(T)==4 && (T)0.5 != 0) { float f = (float)((r>>11)&0xfffff) / 1024.0f; h[i] = (r&1)? -f : f; } else h[i] = (T)(r & 0xff); }
    T *src, *dst, *agg, *inc; unsigned *cnt, *flags;
    CK(cudaMalloc(&src, n*sizeof(T))); CK(cudaMalloc(&dst, n*sizeof(T)));
    CK(cudaMalloc(&agg, tiles*sizeof(T))); CK(cudaMalloc(&inc, tiles*sizeof(T)));
    CK(cudaMalloc(&cnt, 4)); CK(cudaMalloc(&flags, 2*tiles*4));
    CK(cudaMemcpy(src, h.data(), n*sizeof(T), cudaMemcpyHostToDevice));
    void* tmp = 0; size_t tb = 0; cub::DeviceScan::InclusiveSum(tmp, tb, src, dst, (int64_t)n); CK(cudaMalloc(&tmp, tb + 16));
#ifdef XV_TRACE
    unsigned long long* tr; CK(cudaMalloc(&tr, tiles * 64)); CK(cudaMemcpyToSymbol(xv_trace, &tr, sizeof(tr)));
#endif
    cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
    for (int which = 0; which < 2; ++which) {
      std::vector<float> ts;
      for (int r = 0; r < reps + 2; ++r) {
        CK(cudaMemset(dst, 0xff, n*sizeof(T)));
        CK(cudaMemsetAsync(scrub, r, sb));
        cudaEventRecord(e0);
        if (which == 0) {
          ScanDeviceParams c{0, (unsigned)(2*tiles), 0, 1, 0, 1};
          scan_device<<<(unsigned)((2*tiles + 255)/256), 256>>>(src, dst, cnt, flags, agg, inc, c);
          ScanDeviceParams p{(unsigned)n, (unsigned)tiles, 0, 0, 1u<<14, 0};
          scan_device<<<(unsigned)tiles, 256>>>(src, dst, cnt, flags, agg, inc, p);
        } else {
          cub::DeviceScan::InclusiveSum(tmp, tb, src, dst, (int64_t)n);
        }
        cudaEventRecord(e1); CK(cudaEventSynchronize(e1)); CK(cudaGetLastError());
        float ms; cudaEventElapsedTime(&ms, e0, e1); if (r >= 2) ts.push_back(ms*1000);
        if (r == 0) {
          std::vector<T> o(n); CK(cudaMemcpy(o.data(), dst, n*sizeof(T), cudaMemcpyDeviceToHost));
          unsigned long long hsh = 1469598103934665603ull; for (size_t i = 0; i < n; ++i) { unsigned b; memcpy(&b, &o[i], 4); hsh = (hsh ^ b) * 1099511628211ull; }
          if ((T)0.5 == 0) { unsigned acc = 0; size_t bad = 0; for (size_t i = 0; i < n; ++i) { acc += (unsigned)h[i]; if ((T)acc != o[i] && bad++ == 0) printf("  mismatch at %zu\n", i); } if (bad) printf("  CHECK FAIL %s n=%zu bad=%zu\n", which ? "cub" : name, n, bad); }
          if (which == 0) printf("  hash %s n=%zu %016llx\n", name, n, hsh);
        }
      }
#ifdef XV_TRACE
      if (which == 0) {
        std::vector<unsigned long long> t(tiles * 8); CK(cudaMemcpy(t.data(), tr, tiles * 64, cudaMemcpyDeviceToHost));
        unsigned long long t0 = ~0ull, tend = 0; double mm = 0, a = 0, b = 0, c = 0, polls = 0, wins = 0, path = 0; std::vector<double> lb;
        for (size_t k = 0; k < tiles; ++k) { auto* x = &t[k*8]; t0 = std::min(t0, x[0]); tend = std::max(tend, x[3]); a += x[1]-x[0]; b += x[2]-x[1]; c += x[3]-x[2]; lb.push_back(x[2]-x[1]); polls += x[4]; wins += x[5]; path += x[6] != 0; mm += x[6] ? x[6] - 1 : 0; }
        std::sort(lb.begin(), lb.end());
        double span = tend - t0;
        printf("  trace n=%zu tiles=%zu span %.1f us; per tile ns: load+local %.0f lookback %.0f (p10 %.0f p50 %.0f p90 %.0f p99 %.0f) store %.0f; polls/tile %.2f windows/tile %.2f fastpath %.3f (mean m %.1f); tiles in flight %.1f\n",
          n, tiles, span/1e3, a/tiles, b/tiles, lb[tiles/10], lb[tiles/2], lb[tiles*9/10], lb[tiles*99/100], c/tiles, polls/tiles, wins/tiles, path/tiles, mm/std::max(path,1.0), (a+b+c)/span);
        // start order: how often a tile starts before its predecessor
        { std::vector<std::pair<unsigned long long,int>> ev; for (size_t k = 0; k < tiles; ++k) { ev.push_back({t[k*8], 1}); ev.push_back({t[k*8+3], -1}); } std::sort(ev.begin(), ev.end()); int cur = 0, mx = 0; for (auto& q : ev) { cur += q.second; mx = std::max(mx, cur); } printf("  trace max tiles alive %d\n", mx); }
        size_t inv = 0; for (size_t k = 1; k < tiles; ++k) if (t[k*8] < t[(k-1)*8]) ++inv;
        printf("  trace start inversions %zu; first 3 tiles' lookback ns: %llu %llu %llu\n", inv, t[1*8+2]-t[1*8+1], t[2*8+2]-t[2*8+1], t[3*8+2]-t[3*8+1]);
      }
#endif
      std::sort(ts.begin(), ts.end());
      printf("%-14s %-4s n=%-10zu median %9.1f us  min %9.1f  GB/s %7.1f\n", which ? "cub" : name, sizeof(T)==4 && (T)0.5 != 0 ? "f32" : "i32", n, ts[ts.size()/2], ts[0], 2.0*n*sizeof(T)/ts[ts.size()/2]/1e3);
    }
    cudaFree(src); cudaFree(dst); cudaFree(agg); cudaFree(inc); cudaFree(cnt); cudaFree(flags); cudaFree(tmp);
  }
}
