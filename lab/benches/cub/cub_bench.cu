// cub_bench: times NVIDIA CUB's device-wide reduce, scan, select, radix sort, partition,
// unique, run-length encoding, reduce-by-key, segmented reduce and histogram on random inputs. It is the baseline that `xwarp bench` measures in the same run and prints its own
// times against (`lab/src/bench/cub.rs` embeds this file, builds it with nvcc and parses what it
// prints).
//
// Build:
//   nvcc -O3 -std=c++17 -lpthread -arch=native -o cub_bench cub_bench.cu
// The host half alone (inputs, checks and their self-test; no CUDA), for machines without nvcc:
//   g++ -O2 -std=c++17 -pthread -DCUB_BENCH_HOST_ONLY -x c++ -o cub_checks cub_bench.cu
//
// Usage (every option is optional; `--name value` and `--name=value` both work):
//   cub_bench [--sizes 1024,1048576,...]      element counts              (default 2^10,2^16,2^20,2^24,2^28)
//             [--types i32,u32,f32,i64,u64,f64]                           (default: all six)
//             [--algos reduce_sum,reduce_min,reduce_max,scan_inclusive,scan_exclusive,select_if,
//                      sort_keys,sort_pairs,partition_if,unique,run_length_encode,
//                      reduce_by_key,segmented_sum_16,segmented_sum_1,histogram_even_256,
//                      histogram_even_one_bin]                            (default: all sixteen)
//             [--reps 21]                     timed repetitions per case  (default 21)
//             [--scrub-bytes 268435456]       L2 scrub buffer, 0 = none   (default 256 MiB)
//             [--seed 12345]                  input generator seed        (default 12345)
//             [--dump-inputs K]               print the first K inputs of each type and exit
//                                             (needs no GPU: a cross-check of the generator)
//             [--forms-max N]                 the largest size that also gets a `forms` line
//                                             (default 65536; 0: none)
//             [--launches]                    also time each kernel of each case (`launches`)
//             [--self-test-checks]            only prove that the sort checks catch a swapped,
//                                             lost, duplicated or unstable element, and exit
//                                             (needs no GPU)
//   An unknown option or value prints a message on stderr and exits with status 2.
//
// Inputs: for each (type, n) a fresh SplitMix64 generator seeded with --seed draws n values with
// the recipe of `Rng::vec` in src/element.rs: integers are the generator's 64 random bits
// truncated to the type; floats are finite values of random sign with magnitude in 2^-20..2^20
// (f32 values are the f64 recipe rounded to nearest). So the inputs are the ones xwarp's own
// benchmark times, bit for bit. They are uploaded once per (type, n) and shared by every
// algorithm.
//
// Algorithms (one CUB call each, on the legacy default stream):
//   reduce_sum / reduce_min / reduce_max   cub::DeviceReduce::Sum / Min / Max into one element
//   scan_inclusive / scan_exclusive        cub::DeviceScan::InclusiveSum / ExclusiveSum (not in place)
//   select_if                              cub::DeviceSelect::If with `v > threshold`, where the
//                                          threshold is 0 for signed integers and floats, 2^31
//                                          for u32 and 2^63 for u64 (about half the values pass)
//   sort_keys                              cub::DeviceRadixSort::SortKeys, ascending, every bit,
//                                          not in place (the inputs are the keys)
//   sort_pairs                             cub::DeviceRadixSort::SortPairs, the same keys with
//                                          values naming their input places (xwarp's pair
//                                          values): for 4-byte keys the uint32 values 0, 1, ...,
//                                          n - 1; for 8-byte keys (i64, u64, f64) uint64 values
//                                          (i << 32) | (i ^ 0x9e3779b9), both words the index
//   partition_if                           cub::DevicePartition::If with select_if's predicate (the
//                                          others after the selected ones, in reverse order)
//   unique                                 cub::DeviceSelect::Unique
//   run_length_encode                      cub::DeviceRunLengthEncode::Encode (int lengths)
//   reduce_by_key                          cub::DeviceReduce::ReduceByKey, sum, the input as both
//                                          keys and values
//   segmented_sum_16 / segmented_sum_1     cub::DeviceSegmentedReduce::Sum over segments of 16
//                                          elements / over one segment of the whole input
//   histogram_even_256                     cub::DeviceHistogram::HistogramEven, 256 bins (int
//                                          counts) over [-2^29, 2^29) (u32 [2^30, 3*2^30), i64
//                                          [-2^61, 2^61), u64 [2^62, 3*2^62), floats [-2^20, 2^20))
//   histogram_even_one_bin                 the same bins over an input of its own: n copies of
//                                          lower + (upper - lower) / 3 (every sample in one bin)
//   (CUB 3.0.1 has no DeviceTopK: xwarp's top-k is measured against its own sort.)
// The sorts get a 32-bit item count, so that CUB sorts with 32-bit offsets, its fastest path
// (a 64-bit count makes CUB use 64-bit offsets); xwarp's sort takes at most 2^30 - 1 keys, and a
// larger size prints a `skip` line for the sorts.
//
// Per case: temporary storage is sized and allocated once; one call is checked against the host
// on every core, in one pass over the data (integer sums and scans exact with wrap-around,
// min/max and selection exact — CUB's selection is stable — float sums and scans within a
// rounding tolerance, since CUB's association order is its own; sorts without a host sort, by
// the properties that define them: keys in CUB's order and the same multiset of bit patterns as
// the input (a fingerprint), pairs exactly — every value one an input index makes (a uint64
// whose two words disagree was moved or written wrong in one of them), the indices a
// permutation of 0..n-1, each key the input's key at its value's index, equal keys in
// increasing index); two untimed warm-up calls follow. Then:
//   GPU time:  --reps calls, each between two cudaEvents; before each, outside the events, a
//              cudaMemsetAsync over --scrub-bytes evicts the L2 cache.
//   host wall: --reps more calls, each timed with std::chrono::steady_clock around the CUB call
//              and what makes its result usable on the host: a cudaMemcpy of the one result
//              element (reduce), of the selected count (select), or cudaStreamSynchronize
//              (scan, sort). The same scrub, followed by a device synchronisation, precedes each.
//   launches (with --launches): the call captured into a CUDA Graph with an event node after each
//              of its nodes, launched min(--reps, 7) times; the median GPU time of each node from
//              the end of the one before (kernels by name, memsets, copies).
//   forms (reduce, scan and select at n <= --forms-max): the host wall per call of a sequence of
//              10 calls on the same buffers, two ways, --reps times each, from an idle GPU after
//              the scrub: queued (the 10 calls back to back on the legacy default stream, then
//              what makes the last result usable on the host) and graph (the 10 calls captured
//              once into a CUDA Graph on a stream of their own, then each repetition one
//              cudaGraphLaunch and the same finish). The graph's result is checked once.
//
// Output on stdout, one line each, machine-readable:
//   # device <name> cc <major>.<minor>
//   # cub <major>.<minor>.<subminor>          (from CUB_VERSION)
//   # cuda <major>.<minor>                    (cudaRuntimeGetVersion)
//   case <algo> <type> <n> <median_ms> <min_ms> <max_ms> <host_median_us> <ok|FAIL>
//   skip <algo> <type> <n> <reason>           (not enough host or device memory for the case)
//   forms <algo> <type> <n> <queued_us> <graph_us> <ok|FAIL>   (medians per call; after its case)
//   launches <algo> <type> <n> <name>:<us> ...  (after its case)
//   # checks self-test ok                     (the sort checks proved at start; else an error)
// A failed check also prints its details on stderr. Any other error prints `error <text>` on
// stderr and exits with status 1.

#ifndef CUB_BENCH_HOST_ONLY
#include <cub/device/device_histogram.cuh>
#include <cub/device/device_partition.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_run_length_encode.cuh>
#include <cub/device/device_scan.cuh>
#include <cub/device/device_segmented_reduce.cuh>
#include <cub/device/device_select.cuh>
#include <cub/version.cuh>
#include <cuda/std/functional>
#include <cuda_runtime.h>
#include <cxxabi.h>
#endif

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <new>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace {

// ---------------------------------------------------------------------------------------------
// Errors

/// Not enough memory (device or host) for one case: reported as a `skip` line, then go on.
struct OutOfMemory {
  std::string reason;
};

/// Anything else: reported as an `error` line, then exit with status 1.
struct Fatal {
  std::string reason;
};

#ifndef CUB_BENCH_HOST_ONLY
/// Turns a CUDA status into an exception; `what` names the call that failed.
void cuda_check(cudaError_t status, const char* what) {
  if (status == cudaSuccess) {
    return;
  }
  if (status == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();  // an allocation failure is not sticky: clear it and go on
    throw OutOfMemory{std::string("device out of memory in ") + what};
  }
  throw Fatal{std::string(what) + ": " + cudaGetErrorName(status) + " (" +
              cudaGetErrorString(status) + ")"};
}

#define CUDA_CHECK(call) cuda_check((call), #call)

// ---------------------------------------------------------------------------------------------
// Owning wrappers

/// A device allocation, freed when it goes out of scope.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t bytes) {
    if (bytes > 0) {
      CUDA_CHECK(cudaMalloc(&ptr_, bytes));
    }
  }
  ~DeviceBuffer() {
    if (ptr_ != nullptr) {
      (void)cudaFree(ptr_);
    }
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* get() const { return ptr_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }

 private:
  void* ptr_ = nullptr;
};

/// A CUDA event with timing enabled.
class Event {
 public:
  Event() { CUDA_CHECK(cudaEventCreate(&event_)); }
  ~Event() { (void)cudaEventDestroy(event_); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  cudaEvent_t get() const { return event_; }

 private:
  cudaEvent_t event_ = nullptr;
};

#endif  // CUB_BENCH_HOST_ONLY

// ---------------------------------------------------------------------------------------------
// Inputs: SplitMix64 and the per-type recipe of xwarp's `Rng`

/// SplitMix64, the generator of xwarp's `Rng`: the same sequence for the same seed.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}

  uint64_t next_u64() {
    state_ += 0x9e3779b97f4a7c15ull;
    uint64_t z = state_;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }

  /// Skips `draws` values of the sequence at once (the state moves by a constant per draw).
  void skip(uint64_t draws) { state_ += draws * 0x9e3779b97f4a7c15ull; }

  /// Uniform in 0..bound: the high 64 bits of the 128-bit product.
  uint64_t below(uint64_t bound) {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(next_u64()) * bound) >> 64);
  }

  /// A finite double of random sign, magnitude in 2^-20 .. 2^20. The three draws happen in
  /// this order (mantissa, exponent, sign) and every step is exact or correctly rounded, so
  /// the value is the same as the Rust one.
  double next_f64_mixed() {
    const double mantissa =
        static_cast<double>(next_u64() >> 11) / static_cast<double>(uint64_t{1} << 53) + 1.0;
    const int exponent = static_cast<int>(below(41)) - 20;
    const double sign = (next_u64() & 1) == 0 ? 1.0 : -1.0;
    return sign * mantissa * std::ldexp(1.0, exponent);
  }

 private:
  uint64_t state_;
};

/// Reinterprets the bits of one trivially copyable type as another of the same size.
template <typename To, typename From>
To bit_cast(From from) {
  static_assert(sizeof(To) == sizeof(From), "bit_cast needs equal sizes");
  To to;
  std::memcpy(&to, &from, sizeof(To));
  return to;
}

/// Per-type facts: the name on the command line and in the output, the random recipe, and the
/// select threshold.
template <typename T>
struct Elem;

template <>
struct Elem<int32_t> {
  static constexpr const char* name = "i32";
  static int32_t random(SplitMix64& rng) {
    return bit_cast<int32_t>(static_cast<uint32_t>(rng.next_u64()));
  }
  static constexpr int32_t threshold = 0;
};

template <>
struct Elem<uint32_t> {
  static constexpr const char* name = "u32";
  static uint32_t random(SplitMix64& rng) { return static_cast<uint32_t>(rng.next_u64()); }
  static constexpr uint32_t threshold = uint32_t{1} << 31;
};

template <>
struct Elem<float> {
  static constexpr const char* name = "f32";
  static float random(SplitMix64& rng) { return static_cast<float>(rng.next_f64_mixed()); }
  static constexpr float threshold = 0.0f;
};

template <>
struct Elem<int64_t> {
  static constexpr const char* name = "i64";
  static int64_t random(SplitMix64& rng) { return bit_cast<int64_t>(rng.next_u64()); }
  static constexpr int64_t threshold = 0;
};

template <>
struct Elem<uint64_t> {
  static constexpr const char* name = "u64";
  static uint64_t random(SplitMix64& rng) { return rng.next_u64(); }
  static constexpr uint64_t threshold = uint64_t{1} << 63;
};

template <>
struct Elem<double> {
  static constexpr const char* name = "f64";
  static double random(SplitMix64& rng) { return rng.next_f64_mixed(); }
  static constexpr double threshold = 0.0;
};

/// The unsigned integer of the same size as T: integer sums wrap in it.
template <typename T>
using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;

/// The value type of a pair sort with keys of T: as wide as the keys (uint32 for 4-byte keys,
/// uint64 for 8-byte ones), as in xwarp's benchmark.
template <typename T>
using PairValue = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;

/// The word the low half of a uint64 pair value holds the index xor'ed with.
constexpr uint64_t kPairCheckWord = 0x9e3779b9;

/// The pair value of the key at input place `i` (below 2^32): the index itself for uint32, and
/// for uint64 the index in the high word and the index xor kPairCheckWord in the low one, so
/// that a word moved apart from its other half, or either word written wrong, shows.
/// (xwarp: `PairValue::of_index` in lab/src/bench/check.rs.)
template <typename V>
V pair_value(size_t i) {
  static_assert(std::is_same_v<V, uint32_t> || std::is_same_v<V, uint64_t>, "u32 or u64 values");
  if constexpr (sizeof(V) == 4) {
    return static_cast<uint32_t>(i);
  } else {
    const uint64_t x = static_cast<uint64_t>(i);
    return (x << 32) | ((x ^ kPairCheckWord) & 0xffffffffu);
  }
}

/// The input place a pair value names, or SIZE_MAX where it is no place's value (a uint64 whose
/// two words disagree).
inline size_t pair_index(uint32_t v) { return v; }
inline size_t pair_index(uint64_t v) {
  const uint64_t high = v >> 32;
  return (v & 0xffffffffu) == (high ^ kPairCheckWord) ? static_cast<size_t>(high) : SIZE_MAX;
}

/// Generator draws per value: 3 for floats (mantissa, exponent, sign), 1 for integers.
template <typename T>
constexpr uint64_t kDraws = std::is_floating_point_v<T> ? 3 : 1;

size_t parallel_pieces_forward(size_t n, const std::function<void(size_t, size_t, size_t)>& f);

/// `n` values of T from a fresh generator seeded with `seed` (xwarp: `Rng::new(seed).vec(n)`),
/// drawn on every core: each piece starts where the sequence reaches it.
template <typename T>
std::vector<T> make_input(uint64_t seed, size_t n) {
  std::vector<T> values(n);
  parallel_pieces_forward(n, [&](size_t lo, size_t hi, size_t) {
    SplitMix64 rng(seed);
    rng.skip(lo * kDraws<T>);
    for (size_t i = lo; i < hi; ++i) {
      values[i] = Elem<T>::random(rng);
    }
  });
  return values;
}

// ---------------------------------------------------------------------------------------------
// Command line

enum class Algo {
  ReduceSum,
  ReduceMin,
  ReduceMax,
  ScanInclusive,
  ScanExclusive,
  SelectIf,
  SortKeys,
  SortPairs,
  PartitionIf,
  Unique,
  RunLengthEncode,
  ReduceByKey,
  SegmentedSum16,
  SegmentedSum1,
  HistogramEven256,
  HistogramEvenOneBin
};

constexpr Algo kAllAlgos[] = {Algo::ReduceSum,        Algo::ReduceMin,      Algo::ReduceMax,
                              Algo::ScanInclusive,    Algo::ScanExclusive,  Algo::SelectIf,
                              Algo::SortKeys,         Algo::SortPairs,      Algo::PartitionIf,
                              Algo::Unique,           Algo::RunLengthEncode, Algo::ReduceByKey,
                              Algo::SegmentedSum16,   Algo::SegmentedSum1,  Algo::HistogramEven256,
                              Algo::HistogramEvenOneBin};

const char* algo_name(Algo algo) {
  switch (algo) {
    case Algo::ReduceSum: return "reduce_sum";
    case Algo::ReduceMin: return "reduce_min";
    case Algo::ReduceMax: return "reduce_max";
    case Algo::ScanInclusive: return "scan_inclusive";
    case Algo::ScanExclusive: return "scan_exclusive";
    case Algo::SelectIf: return "select_if";
    case Algo::SortKeys: return "sort_keys";
    case Algo::SortPairs: return "sort_pairs";
    case Algo::PartitionIf: return "partition_if";
    case Algo::Unique: return "unique";
    case Algo::RunLengthEncode: return "run_length_encode";
    case Algo::ReduceByKey: return "reduce_by_key";
    case Algo::SegmentedSum16: return "segmented_sum_16";
    case Algo::SegmentedSum1: return "segmented_sum_1";
    case Algo::HistogramEven256: return "histogram_even_256";
    case Algo::HistogramEvenOneBin: return "histogram_even_one_bin";
  }
  return "?";
}

bool is_sort(Algo algo) { return algo == Algo::SortKeys || algo == Algo::SortPairs; }

/// The device-wide toolbox's counterparts (run_toolbox_case).
bool is_toolbox(Algo algo) {
  switch (algo) {
    case Algo::PartitionIf:
    case Algo::Unique:
    case Algo::RunLengthEncode:
    case Algo::ReduceByKey:
    case Algo::SegmentedSum16:
    case Algo::SegmentedSum1:
    case Algo::HistogramEven256:
    case Algo::HistogramEvenOneBin: return true;
    default: return false;
  }
}

const char* const kAllTypes[] = {"i32", "u32", "f32", "i64", "u64", "f64"};

struct Options {
  std::vector<uint64_t> sizes{uint64_t{1} << 10, uint64_t{1} << 16, uint64_t{1} << 20,
                              uint64_t{1} << 24, uint64_t{1} << 28};
  std::vector<std::string> types{std::begin(kAllTypes), std::end(kAllTypes)};
  std::vector<Algo> algos{std::begin(kAllAlgos), std::end(kAllAlgos)};
  uint64_t reps = 21;
  uint64_t scrub_bytes = uint64_t{1} << 28;
  uint64_t seed = 12345;
  uint64_t dump_inputs = 0;  // 0: time as usual
  uint64_t forms_max = 65536;
  bool launches = false;
  bool self_test_checks = false;
};

const char* const kOptions[] = {"--sizes", "--types",       "--algos",    "--reps", "--scrub-bytes",
                                "--seed",  "--dump-inputs", "--forms-max"};

/// The largest size accepted: far beyond any GPU's memory, small enough that no byte count
/// overflows.
constexpr uint64_t kMaxSize = uint64_t{1} << 40;

const char kUsage[] =
    "usage: cub_bench [--sizes N,N,...] [--types i32,u32,f32,i64,u64,f64]\n"
    "                 [--algos reduce_sum,reduce_min,reduce_max,scan_inclusive,scan_exclusive,"
    "select_if,sort_keys,sort_pairs,\n"
    "                         partition_if,unique,run_length_encode,reduce_by_key,"
    "segmented_sum_16,\n"
    "                         segmented_sum_1,histogram_even_256,histogram_even_one_bin]\n"
    "                 [--reps R] [--scrub-bytes B] [--seed S] [--dump-inputs K] [--forms-max N]\n"
    "                 [--launches] [--self-test-checks]\n";

/// A command-line mistake: the message goes to stderr with the usage, and the exit status is 2.
struct UsageError {
  std::string reason;
};

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    parts.push_back(text.substr(start, comma == std::string::npos ? std::string::npos
                                                                  : comma - start));
    if (comma == std::string::npos) {
      return parts;
    }
    start = comma + 1;
  }
}

/// A decimal unsigned integer that must use the whole string.
uint64_t parse_u64(const std::string& option, const std::string& text) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) {
    throw UsageError{option + ": '" + text + "' is not a decimal unsigned integer"};
  }
  errno = 0;
  const unsigned long long value = std::strtoull(text.c_str(), nullptr, 10);
  if (errno == ERANGE) {
    throw UsageError{option + ": '" + text + "' is too large"};
  }
  return static_cast<uint64_t>(value);
}

Options parse_args(int argc, char** argv) {
  Options opt;
  for (int i = 1; i < argc; ++i) {
    std::string name = argv[i];
    std::string value;
    const size_t eq = name.find('=');
    if (name.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    } else if (name == "--help" || name == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (name == "--launches") {
      opt.launches = true;
      continue;
    } else if (name == "--self-test-checks") {
      opt.self_test_checks = true;
      continue;
    } else if (std::find(std::begin(kOptions), std::end(kOptions), name) == std::end(kOptions)) {
      throw UsageError{"unknown option '" + name + "'"};
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      throw UsageError{name + ": missing value"};
    }

    if (name == "--sizes") {
      opt.sizes.clear();
      for (const std::string& part : split_commas(value)) {
        const uint64_t n = parse_u64(name, part);
        if (n == 0 || n > kMaxSize) {
          throw UsageError{name + ": sizes must be between 1 and 2^40, not " + part};
        }
        opt.sizes.push_back(n);
      }
    } else if (name == "--types") {
      opt.types.clear();
      for (const std::string& part : split_commas(value)) {
        if (std::find(std::begin(kAllTypes), std::end(kAllTypes), part) == std::end(kAllTypes)) {
          throw UsageError{name + ": unknown type '" + part +
                           "' (known: i32,u32,f32,i64,u64,f64)"};
        }
        opt.types.push_back(part);
      }
    } else if (name == "--algos") {
      opt.algos.clear();
      for (const std::string& part : split_commas(value)) {
        const Algo* found = std::find_if(std::begin(kAllAlgos), std::end(kAllAlgos),
                                         [&](Algo a) { return part == algo_name(a); });
        if (found == std::end(kAllAlgos)) {
          throw UsageError{name + ": unknown algorithm '" + part +
                           "' (known: reduce_sum,reduce_min,reduce_max,scan_inclusive,"
                           "scan_exclusive,select_if,sort_keys,sort_pairs,partition_if,unique,"
                           "run_length_encode,reduce_by_key,segmented_sum_16,segmented_sum_1,"
                           "histogram_even_256,histogram_even_one_bin)"};
        }
        opt.algos.push_back(*found);
      }
    } else if (name == "--reps") {
      opt.reps = parse_u64(name, value);
      if (opt.reps == 0 || opt.reps > 1000000) {
        throw UsageError{name + ": must be between 1 and 1000000, not " + value};
      }
    } else if (name == "--scrub-bytes") {
      opt.scrub_bytes = parse_u64(name, value);
    } else if (name == "--seed") {
      opt.seed = parse_u64(name, value);
    } else if (name == "--dump-inputs") {
      opt.dump_inputs = parse_u64(name, value);
    } else if (name == "--forms-max") {
      opt.forms_max = parse_u64(name, value);
    } else {
      throw UsageError{"unknown option '" + name + "'"};
    }
  }
  return opt;
}

// ---------------------------------------------------------------------------------------------
// Work on every core

/// Runs `f(lo, hi)` over `0..n` cut into at most one piece per core (pieces of at least 2^16),
/// each on its own thread, and returns the number of pieces; piece `p` is
/// `p * step .. min(n, (p + 1) * step)` with `step = piece_step(n)`.
size_t piece_count(size_t n) {
  const size_t threads = std::max(1u, std::thread::hardware_concurrency());
  const size_t least = size_t{1} << 16;
  return std::max<size_t>(1, std::min(threads, (n + least - 1) / least));
}

size_t piece_step(size_t n) {
  const size_t pieces = piece_count(n);
  return std::max<size_t>(1, (n + pieces - 1) / pieces);
}

template <typename F>
size_t parallel_pieces(size_t n, const F& f) {
  const size_t pieces = piece_count(n);
  const size_t step = piece_step(n);
  if (pieces == 1) {
    f(size_t{0}, n, size_t{0});
    return 1;
  }
  std::vector<std::thread> pool;
  for (size_t p = 0; p < pieces; ++p) {
    const size_t lo = std::min(n, p * step);
    const size_t hi = std::min(n, lo + step);
    pool.emplace_back([&f, lo, hi, p] { f(lo, hi, p); });
  }
  for (auto& t : pool) t.join();
  return pieces;
}

/// The first problem any piece found (the one of the lowest piece), or "".
std::string first_problem(const std::vector<std::string>& problems) {
  for (const std::string& p : problems) {
    if (!p.empty()) return p;
  }
  return "";
}

// ---------------------------------------------------------------------------------------------
// Checks against the host (every core, O(n); no host sort)

/// A value in a form that prints exactly.
template <typename T>
std::string show(T v) {
  char text[64];
  if constexpr (std::is_floating_point_v<T>) {
    std::snprintf(text, sizeof text, "%.17g", static_cast<double>(v));
  } else if constexpr (std::is_signed_v<T>) {
    std::snprintf(text, sizeof text, "%lld", static_cast<long long>(v));
  } else {
    std::snprintf(text, sizeof text, "%llu", static_cast<unsigned long long>(v));
  }
  return text;
}

/// Whether a float sum over `n` values is close enough to a reference computed in long double.
/// Any order of summation errs by at most (depth) * eps * sum(|x|) to first order, where depth is
/// the longest chain of additions. CUB's chains are far shorter than sqrt(n) + 64 for a
/// reduction and, for a scan, the random signs keep the partial sums far below sum(|x|), so the
/// bound leaves no room for a false alarm while still catching a dropped or doubled tile of
/// values at modest sizes.
template <typename T>
bool float_close(T got, long double want, long double sum_abs, size_t n) {
  const long double eps = std::numeric_limits<T>::epsilon();
  const long double depth = std::sqrt(static_cast<long double>(n)) + 64.0L;
  return std::fabs(static_cast<long double>(got) - want) <= eps * depth * sum_abs;
}

/// Per piece of the input: the sum (long double for floats, wrapping bits for integers) and the
/// sum of magnitudes.
template <typename T>
struct PieceSums {
  long double sum = 0.0L;
  long double sum_abs = 0.0L;
  Bits<T> bits = 0;
};

template <typename T>
std::vector<PieceSums<T>> piece_sums(const std::vector<T>& in) {
  std::vector<PieceSums<T>> sums(piece_count(in.size()));
  parallel_pieces(in.size(), [&](size_t lo, size_t hi, size_t p) {
    PieceSums<T> s;
    for (size_t i = lo; i < hi; ++i) {
      if constexpr (std::is_floating_point_v<T>) {
        s.sum += in[i];
        s.sum_abs += std::fabs(static_cast<long double>(in[i]));
      } else {
        s.bits += static_cast<Bits<T>>(in[i]);
      }
    }
    sums[p] = s;
  });
  return sums;
}

/// Checks one reduction result; an empty string means ok, else what is wrong.
template <typename T>
std::string check_reduce(Algo algo, const std::vector<T>& in, T got) {
  if (algo == Algo::ReduceSum) {
    long double sum = 0.0L;
    long double sum_abs = 0.0L;
    Bits<T> bits = 0;
    for (const PieceSums<T>& s : piece_sums(in)) {
      sum += s.sum;
      sum_abs += s.sum_abs;
      bits += s.bits;
    }
    if constexpr (std::is_floating_point_v<T>) {
      if (!float_close(got, sum, sum_abs, in.size())) {
        char text[128];
        std::snprintf(text, sizeof text, "sum %.17g, host %.17Lg (sum of |x| %.6Lg)",
                      static_cast<double>(got), sum, sum_abs);
        return text;
      }
      return "";
    } else {
      const T want = bit_cast<T>(bits);
      return got == want ? "" : "sum " + show(got) + ", host " + show(want);
    }
  }
  std::vector<T> best(piece_count(in.size()), in[0]);
  parallel_pieces(in.size(), [&](size_t lo, size_t hi, size_t p) {
    T b = in[lo];
    for (size_t i = lo; i < hi; ++i) {
      b = algo == Algo::ReduceMin ? std::min(b, in[i]) : std::max(b, in[i]);
    }
    best[p] = b;
  });
  T want = best[0];
  for (T v : best) {
    want = algo == Algo::ReduceMin ? std::min(want, v) : std::max(want, v);
  }
  return got == want ? "" : std::string(algo_name(algo)) + " " + show(got) + ", host " + show(want);
}

/// Checks a scan output element by element (each piece from the prefix of the pieces before
/// it); reports the first mismatch.
template <typename T>
std::string check_scan(Algo algo, const std::vector<T>& in, const std::vector<T>& out) {
  const bool inclusive = algo == Algo::ScanInclusive;
  const std::vector<PieceSums<T>> sums = piece_sums(in);
  std::vector<PieceSums<T>> before(sums.size());
  for (size_t p = 1; p < sums.size(); ++p) {
    before[p].sum = before[p - 1].sum + sums[p - 1].sum;
    before[p].sum_abs = before[p - 1].sum_abs + sums[p - 1].sum_abs;
    before[p].bits = before[p - 1].bits + sums[p - 1].bits;
  }
  std::vector<std::string> problems(sums.size());
  parallel_pieces(in.size(), [&](size_t lo, size_t hi, size_t p) {
    PieceSums<T> prefix = before[p];
    for (size_t i = lo; i < hi; ++i) {
      if (inclusive) {
        prefix.sum += in[i];
        prefix.sum_abs += std::fabs(static_cast<long double>(in[i]));
        prefix.bits += static_cast<Bits<T>>(in[i]);
      }
      if constexpr (std::is_floating_point_v<T>) {
        // The exclusive output at 0 is T{} exactly; the bound is 0 there and demands it.
        if (!float_close(out[i], prefix.sum, prefix.sum_abs, i + 1)) {
          char text[160];
          std::snprintf(text, sizeof text, "element %zu: %.17g, host %.17Lg", i,
                        static_cast<double>(out[i]), prefix.sum);
          problems[p] = text;
          return;
        }
      } else if (out[i] != bit_cast<T>(prefix.bits)) {
        problems[p] = "element " + std::to_string(i) + ": " + show(out[i]) + ", host " +
                      show(bit_cast<T>(prefix.bits));
        return;
      }
      if (!inclusive) {
        prefix.sum += in[i];
        prefix.sum_abs += std::fabs(static_cast<long double>(in[i]));
        prefix.bits += static_cast<Bits<T>>(in[i]);
      }
    }
  });
  return first_problem(problems);
}

/// Checks a selection: the count, then the selected values in input order (CUB's select is
/// stable), each piece from the count of the pieces before it.
template <typename T>
std::string check_select(const std::vector<T>& in, int64_t count, const std::vector<T>& out) {
  const T threshold = Elem<T>::threshold;
  std::vector<int64_t> kept(piece_count(in.size()), 0);
  parallel_pieces(in.size(), [&](size_t lo, size_t hi, size_t p) {
    int64_t k = 0;
    for (size_t i = lo; i < hi; ++i) k += in[i] > threshold ? 1 : 0;
    kept[p] = k;
  });
  int64_t want = 0;
  std::vector<int64_t> first(kept.size(), 0);
  for (size_t p = 0; p < kept.size(); ++p) {
    first[p] = want;
    want += kept[p];
  }
  if (count != want) {
    return "count " + std::to_string(count) + ", host " + std::to_string(want);
  }
  std::vector<std::string> problems(kept.size());
  parallel_pieces(in.size(), [&](size_t lo, size_t hi, size_t p) {
    size_t k = static_cast<size_t>(first[p]);
    for (size_t i = lo; i < hi; ++i) {
      if (in[i] > threshold) {
        if (out[k] != in[i]) {
          problems[p] = "selected element " + std::to_string(k) + " (input " + std::to_string(i) +
                        "): " + show(out[k]) + ", host " + show(in[i]);
          return;
        }
        ++k;
      }
    }
  });
  return first_problem(problems);
}

/// A key as CUB's radix sort orders it: an unsigned integer of the key's width whose order is the
/// sort's. Unsigned integers as they are; signed integers with the sign bit flipped; floats with
/// -0.0 taken as +0.0 (CUB sorts the two zeros as equal, in input order, and writes each key's own
/// bits), then every bit flipped where the sign is set and only the sign bit elsewhere.
template <typename T>
Bits<T> radix_order(T key) {
  constexpr Bits<T> sign = Bits<T>{1} << (8 * sizeof(T) - 1);
  Bits<T> bits = bit_cast<Bits<T>>(key);
  if constexpr (std::is_floating_point_v<T>) {
    if (bits == sign) {
      bits = 0;
    }
    return (bits & sign) != 0 ? static_cast<Bits<T>>(~bits) : static_cast<Bits<T>>(bits ^ sign);
  } else if constexpr (std::is_signed_v<T>) {
    return static_cast<Bits<T>>(bits ^ sign);
  } else {
    return bits;
  }
}

/// A multiset fingerprint of keys' bit patterns: two sums of a keyed 64-bit mix, and a product
/// of (point - key) modulo the prime 2^61 - 1. Two different multisets of n keys agree on the
/// product at no more than n of the 2^61 - 1 points.
struct Fingerprint {
  uint64_t sum0 = 0;
  uint64_t sum1 = 0;
  uint64_t product = 1;
  size_t len = 0;
  bool operator==(const Fingerprint& o) const {
    return sum0 == o.sum0 && sum1 == o.sum1 && product == o.product && len == o.len;
  }
};

constexpr uint64_t kP61 = (uint64_t{1} << 61) - 1;

uint64_t mul61(uint64_t a, uint64_t b) {
  const unsigned __int128 p = static_cast<unsigned __int128>(a) * b;
  uint64_t r = (static_cast<uint64_t>(p) & kP61) + static_cast<uint64_t>(p >> 61);
  return r >= kP61 ? r - kP61 : r;
}

uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

struct FingerprintKey {
  uint64_t k0, k1, point;
  explicit FingerprintKey(uint64_t seed) {
    SplitMix64 rng(seed ^ 0xf16e597a1cull);
    k0 = rng.next_u64();
    k1 = rng.next_u64();
    point = rng.next_u64() % kP61;
  }
};

template <typename T>
Fingerprint fingerprint(const T* v, size_t n, const FingerprintKey& key) {
  std::vector<Fingerprint> parts(piece_count(n));
  parallel_pieces(n, [&](size_t lo, size_t hi, size_t p) {
    Fingerprint f;
    f.len = hi - lo;
    for (size_t i = lo; i < hi; ++i) {
      const uint64_t bits = static_cast<uint64_t>(bit_cast<Bits<T>>(v[i]));
      f.sum0 += mix64(bits ^ key.k0);
      f.sum1 += mix64(mix64(bits) + key.k1);
      const uint64_t x = ((bits & kP61) + (bits >> 61)) % kP61;
      f.product = mul61(f.product, (key.point + kP61 - x) % kP61);
    }
    parts[p] = f;
  });
  Fingerprint all;
  for (const Fingerprint& f : parts) {
    all.sum0 += f.sum0;
    all.sum1 += f.sum1;
    all.product = mul61(all.product, f.product);
    all.len += f.len;
  }
  return all;
}

/// The first index i with !ok(i) in 0..n (and how many), on every core.
template <typename F>
std::pair<size_t, size_t> first_failing(size_t n, const F& ok) {
  std::vector<size_t> first(piece_count(n), SIZE_MAX);
  std::vector<size_t> count(first.size(), 0);
  parallel_pieces(n, [&](size_t lo, size_t hi, size_t p) {
    for (size_t i = lo; i < hi; ++i) {
      if (!ok(i)) {
        if (first[p] == SIZE_MAX) first[p] = i;
        ++count[p];
      }
    }
  });
  size_t f = SIZE_MAX, c = 0;
  for (size_t p = 0; p < first.size(); ++p) {
    if (f == SIZE_MAX) f = first[p];
    c += count[p];
  }
  return {f, c};
}

/// Compares bit patterns element by element, on every core; reports the first difference.
template <typename T>
std::string check_bits(const char* what, const std::vector<T>& want, const std::vector<T>& got) {
  if (want.size() != got.size()) {
    return std::string(what) + ": " + std::to_string(got.size()) + " elements, host " +
           std::to_string(want.size());
  }
  const auto bad = first_failing(want.size(), [&](size_t i) {
    return bit_cast<Bits<T>>(got[i]) == bit_cast<Bits<T>>(want[i]);
  });
  if (bad.first == SIZE_MAX) return "";
  const size_t i = bad.first;
  return std::string(what) + " element " + std::to_string(i) + ": " + show(got[i]) + ", host " +
         show(want[i]);
}

/// Checks sorted keys without sorting: in CUB's ascending order, and the same multiset of bit
/// patterns as the input (`want` is the input's fingerprint under `key`).
template <typename T>
std::string check_sorted_keys(const Fingerprint& want, const FingerprintKey& key,
                              const std::vector<T>& got) {
  if (got.size() != want.len) {
    return std::to_string(got.size()) + " keys, expected " + std::to_string(want.len);
  }
  const size_t n = got.size();
  const auto bad = first_failing(n == 0 ? 0 : n - 1, [&](size_t i) {
    return radix_order(got[i]) <= radix_order(got[i + 1]);
  });
  if (bad.first != SIZE_MAX) {
    const size_t i = bad.first;
    return "keys out of order: element " + std::to_string(i) + " is " + show(got[i]) +
           ", element " + std::to_string(i + 1) + " is " + show(got[i + 1]) + " (" +
           std::to_string(bad.second) + " such places)";
  }
  if (!(fingerprint(got.data(), n, key) == want)) {
    return "the sorted keys are not the input's keys (another multiset: a key lost, duplicated "
           "or altered)";
  }
  return "";
}

/// Checks a stable sort of pairs whose values were pair_value<V>(i) of the input indices
/// 0..n-1, exactly: every value one an index makes (both words of a uint64 naming the same
/// index), the indices a permutation (a bitmap), each key the input's key at its value's index,
/// and every pair after the one before in the order (radix order, input index): sorted and
/// stable. Only the stable sort has all these properties.
template <typename T, typename V>
std::string check_sorted_pairs(const std::vector<T>& in, const std::vector<T>& keys,
                               const std::vector<V>& values) {
  static_assert(std::is_same_v<V, uint32_t> || std::is_same_v<V, uint64_t>, "u32 or u64 values");
  const size_t n = in.size();
  if (keys.size() != n || values.size() != n) {
    return std::to_string(keys.size()) + " keys and " + std::to_string(values.size()) +
           " values, expected " + std::to_string(n) + " of each";
  }
  auto bad = first_failing(n, [&](size_t i) { return pair_index(values[i]) < n; });
  if (bad.first != SIZE_MAX) {
    const size_t i = bad.first;
    char hex[32];
    std::snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(values[i]));
    if (pair_index(values[i]) == SIZE_MAX) {
      return "value " + std::to_string(i) + " is " + hex +
             ", whose two words name different input indices (a word moved or written apart "
             "from its other half)";
    }
    return "value " + std::to_string(i) + " is " + hex + ", of index " +
           std::to_string(pair_index(values[i])) + ", not an input index";
  }
  // From here every value names an index below n.
  auto index = [&](size_t i) { return pair_index(values[i]); };
  std::vector<std::atomic<uint64_t>> seen((n + 63) / 64);
  for (auto& w : seen) w.store(0, std::memory_order_relaxed);
  bad = first_failing(n, [&](size_t i) {
    const size_t v = index(i);
    const uint64_t bit = uint64_t{1} << (v % 64);
    return (seen[v / 64].fetch_or(bit, std::memory_order_relaxed) & bit) == 0;
  });
  if (bad.first != SIZE_MAX) {
    const size_t i = bad.first;
    return "value of index " + std::to_string(index(i)) + " appears twice (again at " +
           std::to_string(i) + "): an element duplicated and another lost";
  }
  bad = first_failing(n, [&](size_t i) {
    return bit_cast<Bits<T>>(keys[i]) == bit_cast<Bits<T>>(in[index(i)]);
  });
  if (bad.first != SIZE_MAX) {
    const size_t i = bad.first;
    return "key " + std::to_string(i) + " is " + show(keys[i]) + " but its value names index " +
           std::to_string(index(i)) + ", whose key is " + show(in[index(i)]);
  }
  bad = first_failing(n == 0 ? 0 : n - 1, [&](size_t i) {
    const Bits<T> a = radix_order(keys[i]), b = radix_order(keys[i + 1]);
    return a < b || (a == b && index(i) < index(i + 1));
  });
  if (bad.first != SIZE_MAX) {
    const size_t i = bad.first;
    const bool equal = radix_order(keys[i]) == radix_order(keys[i + 1]);
    return std::string(equal ? "equal keys out of input order (unstable)" : "keys out of order") +
           ": element " + std::to_string(i) + " is " + show(keys[i]) + " from input index " +
           std::to_string(index(i)) + ", element " + std::to_string(i + 1) + " is " +
           show(keys[i + 1]) + " from " + std::to_string(index(i + 1));
  }
  return "";
}

/// The checks of the sorts must catch each kind of wrong answer: a swapped pair, a lost element,
/// a duplicated element and an unstable run. Returns "" when every mutation of a correct stable
/// sort of 100003 keys with many repeats is caught and the sort itself passes.
std::string self_test_checks() {
  const size_t n = 100003;
  SplitMix64 rng(77);
  std::vector<uint32_t> in(n);
  for (auto& k : in) k = static_cast<uint32_t>(rng.below(97));
  std::vector<uint32_t> idx(n);
  for (size_t i = 0; i < n; ++i) idx[i] = static_cast<uint32_t>(i);
  std::stable_sort(idx.begin(), idx.end(), [&](uint32_t a, uint32_t b) { return in[a] < in[b]; });
  std::vector<uint32_t> keys(n);
  for (size_t i = 0; i < n; ++i) keys[i] = in[idx[i]];
  const FingerprintKey key(5);
  const Fingerprint want = fingerprint(in.data(), n, key);
  if (!check_sorted_keys(want, key, keys).empty()) return "the key check fails a correct sort";
  if (!check_sorted_pairs(in, keys, idx).empty()) return "the pair check fails a correct sort";
  size_t step = 1;
  while (keys[step] == keys[step - 1]) ++step;  // keys[step - 1] < keys[step]
  size_t same = 1;
  while (keys[same] != keys[same - 1]) ++same;  // keys[same - 1] == keys[same]
  {
    auto k = keys;
    auto v = idx;
    std::swap(k[step - 1], k[step]);
    std::swap(v[step - 1], v[step]);
    if (check_sorted_keys(want, key, k).empty()) return "the key check missed a swapped pair";
    if (check_sorted_pairs(in, k, v).empty()) return "the pair check missed a swapped pair";
  }
  {
    auto k = keys;
    auto v = idx;
    k[step] = k[step - 1];  // element `step` lost, its neighbour duplicated
    v[step] = v[step - 1];
    if (check_sorted_keys(want, key, k).empty()) return "the key check missed a lost element";
    if (check_sorted_pairs(in, k, v).empty()) return "the pair check missed a lost element";
  }
  {
    auto k = keys;
    auto v = idx;
    k[step - 1] = k[step];  // element `step` duplicated, its neighbour lost
    v[step - 1] = v[step];
    if (check_sorted_keys(want, key, k).empty()) return "the key check missed a duplicated element";
    if (check_sorted_pairs(in, k, v).empty()) return "the pair check missed a duplicated element";
    auto v2 = idx;
    v2[same] = v2[same - 1];  // among equal keys: one element twice, its twin lost
    if (check_sorted_pairs(in, keys, v2).empty()) {
      return "the pair check missed a duplicated element among equal keys";
    }
  }
  {
    auto v = idx;
    std::swap(v[same - 1], v[same]);
    if (check_sorted_pairs(in, keys, v).empty()) return "the pair check missed an unstable run";
  }
  // uint64 values (the pair sorts of 8-byte keys): xwarp's pattern, and a word moved or written
  // apart from its other half caught.
  if (pair_value<uint64_t>(0) != 0x000000009e3779b9ull ||
      pair_value<uint64_t>(1) != 0x000000019e3779b8ull ||
      pair_value<uint64_t>(0x3fffffff) != 0x3fffffffa1c88646ull) {
    return "the uint64 pair values are not xwarp's";
  }
  if (pair_index(pair_value<uint64_t>(0x3fffffff)) != 0x3fffffff ||
      pair_index(uint64_t{0xcdcdcdcdcdcdcdcdull}) != SIZE_MAX) {
    return "the uint64 pair values do not name their indices";
  }
  {
    std::vector<uint64_t> in64(n);
    for (size_t i = 0; i < n; ++i) in64[i] = (uint64_t{in[i]} << 40) | in[i];
    std::vector<uint64_t> keys64(n), v64(n);
    for (size_t i = 0; i < n; ++i) {
      keys64[i] = in64[idx[i]];
      v64[i] = pair_value<uint64_t>(idx[i]);
    }
    if (!check_sorted_pairs(in64, keys64, v64).empty()) {
      return "the pair check fails a correct sort with uint64 values";
    }
    const uint64_t low = 0xffffffffu;
    for (const uint64_t word : {low, ~low}) {
      auto v = v64;  // one word of two equal keys' values swapped, the other in place
      const uint64_t a = v[same - 1], b = v[same];
      v[same - 1] = (a & ~word) | (b & word);
      v[same] = (b & ~word) | (a & word);
      if (check_sorted_pairs(in64, keys64, v).empty()) {
        return "the pair check missed an unstable move of one word of a uint64 value";
      }
      auto w = v64;  // one word left unwritten (the poison 0xcd...), the other right
      w[n / 3] = (w[n / 3] & ~word) | (uint64_t{0xcdcdcdcdcdcdcdcdull} & word);
      if (check_sorted_pairs(in64, keys64, w).empty()) {
        return "the pair check missed an unwritten word of a uint64 value";
      }
    }
    {
      auto k = keys64;
      auto v = v64;
      std::swap(k[step - 1], k[step]);
      std::swap(v[step - 1], v[step]);
      if (check_sorted_pairs(in64, k, v).empty()) {
        return "the pair check missed a swapped pair with uint64 values";
      }
    }
    {
      auto v = v64;
      std::swap(v[same - 1], v[same]);
      if (check_sorted_pairs(in64, keys64, v).empty()) {
        return "the pair check missed an unstable run with uint64 values";
      }
      v = v64;
      v[same] = v[same - 1];
      if (check_sorted_pairs(in64, keys64, v).empty()) {
        return "the pair check missed a duplicated element with uint64 values";
      }
    }
  }
  return "";
}

size_t parallel_pieces_forward(size_t n, const std::function<void(size_t, size_t, size_t)>& f) {
  return parallel_pieces(n, f);
}

/// Prints the first `count` inputs of type T as `input <type> <index> <hex bits>` lines.
template <typename T>
void dump_inputs(const Options& opt) {
  const std::vector<T> values = make_input<T>(opt.seed, static_cast<size_t>(opt.dump_inputs));
  for (size_t i = 0; i < values.size(); ++i) {
    const uint64_t bits = static_cast<uint64_t>(bit_cast<Bits<T>>(values[i]));
    std::printf("input %s %zu %0*" PRIx64 "\n", Elem<T>::name, i,
                static_cast<int>(2 * sizeof(T)), bits);
  }
}

/// Calls `f` with a value-initialised T, where T is the C++ type named `type` (a known name).
template <typename F>
void with_type(const std::string& type, F&& f) {
  if (type == "i32") {
    f(int32_t{});
  } else if (type == "u32") {
    f(uint32_t{});
  } else if (type == "f32") {
    f(float{});
  } else if (type == "i64") {
    f(int64_t{});
  } else if (type == "u64") {
    f(uint64_t{});
  } else if (type == "f64") {
    f(double{});
  }
}

#ifndef CUB_BENCH_HOST_ONLY

// ---------------------------------------------------------------------------------------------
// Timing

/// The select predicate: `v > threshold`.
template <typename T>
struct GreaterThan {
  T threshold;
  __host__ __device__ bool operator()(const T& v) const { return v > threshold; }
};

/// Evicts the L2 cache by writing a buffer larger than it (nothing when the size is 0).
class Scrubber {
 public:
  explicit Scrubber(uint64_t bytes) : bytes_(bytes), buffer_(bytes) {}

  /// Queues the scrub on the default stream; `rep` varies the byte written.
  void run(uint64_t rep) {
    if (bytes_ > 0) {
      CUDA_CHECK(cudaMemsetAsync(buffer_.get(), static_cast<int>(rep & 0xff), bytes_, 0));
    }
  }

 private:
  uint64_t bytes_;
  DeviceBuffer buffer_;
};

struct Stats {
  double median = 0;
  double min = 0;
  double max = 0;
};

Stats summarize(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  const size_t n = samples.size();
  Stats s;
  s.min = samples.front();
  s.max = samples.back();
  s.median = n % 2 == 1 ? samples[n / 2] : 0.5 * (samples[n / 2 - 1] + samples[n / 2]);
  return s;
}

/// Everything one case needs on the device besides its input.
template <typename T>
struct CaseBuffers {
  CaseBuffers(size_t out_elems, size_t temp_bytes)
      : out(out_elems * sizeof(T)),
        count(sizeof(int64_t)),
        temp(std::max<size_t>(temp_bytes, 1)),
        temp_bytes(temp_bytes) {}
  DeviceBuffer out;
  DeviceBuffer count;
  DeviceBuffer temp;
  size_t temp_bytes;
};

/// Two untimed warm-up calls of `call`, then its GPU time and host wall, and the case line.
///   GPU time:  --reps calls, each between two events that bracket the CUB call alone; the scrub
///              runs before the first event.
///   host wall: --reps more calls, each followed by `finish` (what makes the result usable on the
///              host), each after the same scrub and a device synchronisation.
/// `ok` is the outcome of the case's check.
template <typename Call, typename Finish>
void time_and_print(Algo algo, const char* type, size_t n, bool ok, const Call& call,
                    const Finish& finish, const Options& opt, Scrubber& scrub) {
  for (int i = 0; i < 2; ++i) {
    call();
  }
  CUDA_CHECK(cudaDeviceSynchronize());

  Event start;
  Event stop;
  std::vector<double> gpu_ms;
  gpu_ms.reserve(opt.reps);
  for (uint64_t rep = 0; rep < opt.reps; ++rep) {
    scrub.run(rep);
    CUDA_CHECK(cudaEventRecord(start.get(), 0));
    call();
    CUDA_CHECK(cudaEventRecord(stop.get(), 0));
    CUDA_CHECK(cudaEventSynchronize(stop.get()));
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start.get(), stop.get()));
    gpu_ms.push_back(ms);
  }

  std::vector<double> host_us;
  host_us.reserve(opt.reps);
  for (uint64_t rep = 0; rep < opt.reps; ++rep) {
    scrub.run(rep);
    CUDA_CHECK(cudaDeviceSynchronize());
    const auto t0 = std::chrono::steady_clock::now();
    call();
    finish();
    const auto t1 = std::chrono::steady_clock::now();
    host_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
  }

  const Stats gpu = summarize(std::move(gpu_ms));
  const Stats host = summarize(std::move(host_us));
  std::printf("case %s %s %zu %.6f %.6f %.6f %.3f %s\n", algo_name(algo), type, n, gpu.median,
              gpu.min, gpu.max, host.median, ok ? "ok" : "FAIL");
  std::fflush(stdout);
}

/// One CUB call of `algo` on `n` elements at `in`; with `temp` null it only sizes the
/// temporary storage into `temp_bytes`.
template <typename T>
cudaError_t cub_call(Algo algo, void* temp, size_t& temp_bytes, const T* in, T* out,
                     int64_t* count, int64_t n, cudaStream_t stream = 0) {
  switch (algo) {
    case Algo::ReduceSum: return cub::DeviceReduce::Sum(temp, temp_bytes, in, out, n, stream);
    case Algo::ReduceMin: return cub::DeviceReduce::Min(temp, temp_bytes, in, out, n, stream);
    case Algo::ReduceMax: return cub::DeviceReduce::Max(temp, temp_bytes, in, out, n, stream);
    case Algo::ScanInclusive:
      return cub::DeviceScan::InclusiveSum(temp, temp_bytes, in, out, n, stream);
    case Algo::ScanExclusive:
      return cub::DeviceScan::ExclusiveSum(temp, temp_bytes, in, out, n, stream);
    case Algo::SelectIf:
      return cub::DeviceSelect::If(temp, temp_bytes, in, out, count, n,
                                   GreaterThan<T>{Elem<T>::threshold}, stream);
    case Algo::SortKeys:
    case Algo::SortPairs:
      break;  // run_sort_case
  }
  return cudaErrorInvalidValue;
}

/// One finished call's result (at `out`, and `count` for select) checked against the host: ""
/// when right, else what differs.
template <typename T>
std::string check_case(Algo algo, const std::vector<T>& host_in, const T* out,
                       const int64_t* count) {
  const size_t n = host_in.size();
  const bool is_reduce =
      algo == Algo::ReduceSum || algo == Algo::ReduceMin || algo == Algo::ReduceMax;
  std::string problem;
  if (is_reduce) {
    T got;
    CUDA_CHECK(cudaMemcpy(&got, out, sizeof(T), cudaMemcpyDeviceToHost));
    problem = check_reduce(algo, host_in, got);
  } else if (algo == Algo::SelectIf) {
    int64_t selected = 0;
    CUDA_CHECK(cudaMemcpy(&selected, count, sizeof selected, cudaMemcpyDeviceToHost));
    if (selected < 0 || static_cast<uint64_t>(selected) > n) {
      problem = "count " + std::to_string(selected) + " out of range";
    } else {
      std::vector<T> got(static_cast<size_t>(selected));
      CUDA_CHECK(cudaMemcpy(got.data(), out, got.size() * sizeof(T), cudaMemcpyDeviceToHost));
      problem = check_select(host_in, selected, got);
    }
  } else {
    std::vector<T> got(n);
    CUDA_CHECK(cudaMemcpy(got.data(), out, n * sizeof(T), cudaMemcpyDeviceToHost));
    problem = check_scan(algo, host_in, got);
  }
  return problem;
}

/// The `forms` line of a case: the host wall per call of 10 calls queued back to back, and of
/// the same 10 captured once into a CUDA Graph and launched, each followed by `finish`; the
/// graph's result is checked once against the host (outputs poisoned first).
template <typename T, typename CallOn, typename Finish>
void time_forms(Algo algo, const std::vector<T>& host_in, T* out, int64_t* count,
                const CallOn& call_on, const Finish& finish, const Options& opt,
                Scrubber& scrub) {
  constexpr int kCalls = 10;
  const size_t n = host_in.size();
  std::vector<double> queued_us;
  for (uint64_t rep = 0; rep < opt.reps; ++rep) {
    scrub.run(rep);
    CUDA_CHECK(cudaDeviceSynchronize());
    const auto t0 = std::chrono::steady_clock::now();
    for (int k = 0; k < kCalls; ++k) {
      call_on(0);
    }
    finish();
    const auto t1 = std::chrono::steady_clock::now();
    queued_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / kCalls);
  }
  // A blocking stream: the legacy default stream (where `finish` copies or synchronises) waits
  // for its work.
  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreate(&stream));
  cudaGraph_t graph;
  CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  for (int k = 0; k < kCalls; ++k) {
    call_on(stream);
  }
  CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  cudaGraphExec_t exec;
  CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  const size_t out_elems =
      algo == Algo::ReduceSum || algo == Algo::ReduceMin || algo == Algo::ReduceMax ? 1 : n;
  CUDA_CHECK(cudaMemset(out, 0xcd, out_elems * sizeof(T)));
  CUDA_CHECK(cudaMemset(count, 0xcd, sizeof(int64_t)));
  CUDA_CHECK(cudaGraphLaunch(exec, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  const std::string problem = check_case(algo, host_in, out, count);
  if (!problem.empty()) {
    std::fprintf(stderr, "check %s %s %zu (graph): %s\n", algo_name(algo), Elem<T>::name, n,
                 problem.c_str());
  }
  std::vector<double> graph_us;
  for (uint64_t rep = 0; rep < opt.reps; ++rep) {
    scrub.run(rep);
    CUDA_CHECK(cudaDeviceSynchronize());
    const auto t0 = std::chrono::steady_clock::now();
    CUDA_CHECK(cudaGraphLaunch(exec, stream));
    finish();
    const auto t1 = std::chrono::steady_clock::now();
    graph_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / kCalls);
  }
  CUDA_CHECK(cudaGraphExecDestroy(exec));
  CUDA_CHECK(cudaGraphDestroy(graph));
  CUDA_CHECK(cudaStreamDestroy(stream));
  const Stats queued = summarize(std::move(queued_us));
  const Stats replayed = summarize(std::move(graph_us));
  std::printf("forms %s %s %zu %.3f %.3f %s\n", algo_name(algo), Elem<T>::name, n, queued.median,
              replayed.median, problem.empty() ? "ok" : "FAIL");
  std::fflush(stdout);
}

/// The kernel's name without namespaces and template arguments, from its mangled name.
std::string short_name(const char* mangled) {
  int status = 0;
  char* demangled = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  std::string name = status == 0 && demangled != nullptr ? demangled : mangled;
  std::free(demangled);
  int depth = 0;
  size_t end = name.size();
  for (size_t i = 0; i < name.size(); ++i) {  // the end of the name at template depth 0
    if (name[i] == '<') {
      if (depth == 0) end = std::min(end, i);
      ++depth;
    } else if (name[i] == '>') {
      --depth;
    } else if (name[i] == '(' && depth == 0) {
      end = std::min(end, i);
      break;
    }
  }
  name = name.substr(0, end);
  const size_t colon = name.rfind("::");
  if (colon != std::string::npos) name = name.substr(colon + 2);
  return name.empty() ? "kernel" : name;
}

/// Whether a graph call failed; the graph is then left alone (no launches line).
bool graph_ok(cudaError_t status) {
  if (status == cudaSuccess) return true;
  (void)cudaGetLastError();
  return false;
}

/// The `launches` line of a case: one call captured into a CUDA Graph on a stream of its own,
/// an event record node inserted after each node of the (linear) graph and one before the first,
/// then min(--reps, 7) launches, each after the scrub; per node the median time from the event
/// before it to the event after it. A graph that is not one chain of nodes prints nothing.
template <typename CallOn>
void time_launches(Algo algo, const char* type, size_t n, const CallOn& call_on,
                   const Options& opt, Scrubber& scrub) {
  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreate(&stream));
  cudaGraph_t graph = nullptr;
  CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  call_on(stream);
  CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  std::vector<cudaGraphNode_t> chain;
  size_t roots = 0;
  bool ok = graph_ok(cudaGraphGetRootNodes(graph, nullptr, &roots)) && roots == 1;
  if (ok) {
    cudaGraphNode_t node = nullptr;
    ok = graph_ok(cudaGraphGetRootNodes(graph, &node, &roots));
    while (ok) {
      chain.push_back(node);
      size_t count = 0;
#if CUDART_VERSION >= 13000
      ok = graph_ok(cudaGraphNodeGetDependentNodes(node, nullptr, nullptr, &count));
#else
      ok = graph_ok(cudaGraphNodeGetDependentNodes(node, nullptr, &count));
#endif
      if (!ok || count == 0) break;
      if (count > 1) {
        ok = false;
        break;
      }
#if CUDART_VERSION >= 13000
      ok = graph_ok(cudaGraphNodeGetDependentNodes(node, &node, nullptr, &count));
#else
      ok = graph_ok(cudaGraphNodeGetDependentNodes(node, &node, &count));
#endif
    }
  }
  std::vector<std::string> names;
  for (cudaGraphNode_t node : chain) {
    cudaGraphNodeType kind;
    if (!(ok = ok && graph_ok(cudaGraphNodeGetType(node, &kind)))) break;
    if (kind == cudaGraphNodeTypeKernel) {
      cudaKernelNodeParams params{};
      const char* mangled = nullptr;
      ok = graph_ok(cudaGraphKernelNodeGetParams(node, &params)) &&
           graph_ok(cudaFuncGetName(&mangled, params.func)) && mangled != nullptr;
      names.push_back(ok ? short_name(mangled) : "kernel");
    } else if (kind == cudaGraphNodeTypeMemset) {
      names.push_back("memset");
    } else if (kind == cudaGraphNodeTypeMemcpy) {
      names.push_back("memcpy");
    } else {
      names.push_back("node");
    }
  }
  std::vector<cudaEvent_t> events(chain.size() + 1, nullptr);
  for (auto& e : events) {
    ok = ok && graph_ok(cudaEventCreate(&e));
  }
  cudaGraphNode_t before = nullptr;
  if (ok) {
    ok = graph_ok(cudaGraphAddEventRecordNode(&before, graph, nullptr, 0, events[0]));
#if CUDART_VERSION >= 13000
    ok = ok && graph_ok(cudaGraphAddDependencies(graph, &before, &chain[0], nullptr, 1));
#else
    ok = ok && graph_ok(cudaGraphAddDependencies(graph, &before, &chain[0], 1));
#endif
  }
  for (size_t i = 0; ok && i < chain.size(); ++i) {
    cudaGraphNode_t after = nullptr;
    ok = graph_ok(cudaGraphAddEventRecordNode(&after, graph, &chain[i], 1, events[i + 1]));
    if (ok && i + 1 < chain.size()) {
#if CUDART_VERSION >= 13000
      ok = graph_ok(cudaGraphRemoveDependencies(graph, &chain[i], &chain[i + 1], nullptr, 1)) &&
           graph_ok(cudaGraphAddDependencies(graph, &after, &chain[i + 1], nullptr, 1));
#else
      ok = graph_ok(cudaGraphRemoveDependencies(graph, &chain[i], &chain[i + 1], 1)) &&
           graph_ok(cudaGraphAddDependencies(graph, &after, &chain[i + 1], 1));
#endif
    }
  }
  cudaGraphExec_t exec = nullptr;
  ok = ok && graph_ok(cudaGraphInstantiate(&exec, graph, 0));
  std::vector<std::vector<double>> us(chain.size());
  const uint64_t reps = std::min<uint64_t>(opt.reps, 7);
  for (uint64_t rep = 0; ok && rep < reps; ++rep) {
    scrub.run(rep);
    ok = graph_ok(cudaGraphLaunch(exec, stream)) && graph_ok(cudaStreamSynchronize(stream));
    for (size_t i = 0; ok && i < chain.size(); ++i) {
      float ms = 0;
      ok = graph_ok(cudaEventElapsedTime(&ms, events[i], events[i + 1]));
      us[i].push_back(ms * 1e3);
    }
  }
  if (ok && !chain.empty()) {
    std::string line = std::string("launches ") + algo_name(algo) + " " + type + " " +
                       std::to_string(n);
    for (size_t i = 0; i < chain.size(); ++i) {
      char part[32];
      std::snprintf(part, sizeof part, ":%.3f", summarize(us[i]).median);
      line += " " + names[i] + part;
    }
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
  }
  if (exec != nullptr) (void)cudaGraphExecDestroy(exec);
  for (auto e : events) {
    if (e != nullptr) (void)cudaEventDestroy(e);
  }
  (void)cudaGraphDestroy(graph);
  CUDA_CHECK(cudaStreamDestroy(stream));
}

/// Checks, warms up and times one case, and prints its `case` line.
template <typename T>
void run_case(Algo algo, const std::vector<T>& host_in, const DeviceBuffer& dev_in,
              const Options& opt, Scrubber& scrub) {
  const size_t n = host_in.size();
  const int64_t items = static_cast<int64_t>(n);
  const bool is_reduce =
      algo == Algo::ReduceSum || algo == Algo::ReduceMin || algo == Algo::ReduceMax;
  const T* in = dev_in.as<T>();

  size_t temp_bytes = 0;
  CUDA_CHECK(cub_call<T>(algo, nullptr, temp_bytes, in, nullptr, nullptr, items));
  CaseBuffers<T> buf(is_reduce ? 1 : n, temp_bytes);
  T* out = buf.out.template as<T>();
  int64_t* count = buf.count.template as<int64_t>();
  auto call_on = [&](cudaStream_t stream) {
    size_t bytes = buf.temp_bytes;
    CUDA_CHECK(cub_call<T>(algo, buf.temp.get(), bytes, in, out, count, items, stream));
  };
  auto call = [&]() { call_on(0); };

  // Check one call against the host.
  call();
  CUDA_CHECK(cudaDeviceSynchronize());
  const std::string problem = check_case(algo, host_in, out, count);
  if (!problem.empty()) {
    std::fprintf(stderr, "check %s %s %zu: %s\n", algo_name(algo), Elem<T>::name, n,
                 problem.c_str());
  }

  // Host wall: the call plus what makes its result usable on the host.
  T result;
  int64_t selected = 0;
  auto finish = [&]() {
    if (is_reduce) {
      CUDA_CHECK(cudaMemcpy(&result, out, sizeof(T), cudaMemcpyDeviceToHost));
    } else if (algo == Algo::SelectIf) {
      CUDA_CHECK(cudaMemcpy(&selected, count, sizeof selected, cudaMemcpyDeviceToHost));
    } else {
      CUDA_CHECK(cudaStreamSynchronize(0));
    }
  };
  time_and_print(algo, Elem<T>::name, n, problem.empty(), call, finish, opt, scrub);
  if (opt.launches) {
    time_launches(algo, Elem<T>::name, n, call_on, opt, scrub);
  }
  if (n <= opt.forms_max) {
    time_forms<T>(algo, host_in, out, count, call_on, finish, opt, scrub);
  }
}

void print_skip(Algo algo, const char* type, uint64_t n, const std::string& reason) {
  std::printf("skip %s %s %" PRIu64 " %s\n", algo_name(algo), type, n, reason.c_str());
  std::fflush(stdout);
}

/// One radix sort of `n` keys at `keys_in` (with `values_in` and `values_out` for pairs, else
/// null; values of PairValue<T>: uint32 for 4-byte keys, uint64 for 8-byte ones): ascending
/// over every bit, not in place. With `temp` null it only sizes the temporary storage into
/// `temp_bytes`. The count is 32-bit: CUB then sorts with 32-bit offsets.
template <typename T>
cudaError_t cub_sort(Algo algo, void* temp, size_t& temp_bytes, const T* keys_in, T* keys_out,
                     const PairValue<T>* values_in, PairValue<T>* values_out, int n,
                     cudaStream_t stream = 0) {
  if (algo == Algo::SortPairs) {
    return cub::DeviceRadixSort::SortPairs(temp, temp_bytes, keys_in, keys_out, values_in,
                                           values_out, n, 0, static_cast<int>(8 * sizeof(T)),
                                           stream);
  }
  return cub::DeviceRadixSort::SortKeys(temp, temp_bytes, keys_in, keys_out, n, 0,
                                        static_cast<int>(8 * sizeof(T)), stream);
}

/// Checks, warms up and times one radix sort of the input, and prints its `case` line;
/// `fingerprint` is the input's under `key` (for the key check).
template <typename T>
void run_sort_case(Algo algo, const std::vector<T>& host_in, const DeviceBuffer& dev_in,
                   const Fingerprint& fingerprint, const FingerprintKey& key, const Options& opt,
                   Scrubber& scrub) {
  const size_t n = host_in.size();
  const bool pairs = algo == Algo::SortPairs;
  if (n > static_cast<size_t>(std::numeric_limits<int>::max())) {
    print_skip(algo, Elem<T>::name, n, "more keys than a 32-bit count holds");
    return;
  }
  const int items = static_cast<int>(n);
  const T* keys_in = dev_in.as<T>();

  // The pair values pair_value<V>(i) for i = 0, 1, ..., n - 1 (uint32 for 4-byte keys, uint64
  // for 8-byte ones), uploaded outside the timed calls.
  using V = PairValue<T>;
  const DeviceBuffer values_in(pairs ? n * sizeof(V) : 0);
  const DeviceBuffer values_out(pairs ? n * sizeof(V) : 0);
  if (pairs) {
    std::vector<V> values(n);
    parallel_pieces(n, [&](size_t lo, size_t hi, size_t) {
      for (size_t i = lo; i < hi; ++i) values[i] = pair_value<V>(i);
    });
    CUDA_CHECK(cudaMemcpy(values_in.get(), values.data(), n * sizeof(V), cudaMemcpyHostToDevice));
  }
  const DeviceBuffer keys_out(n * sizeof(T));
  const V* vin = values_in.as<V>();
  V* vout = values_out.as<V>();
  T* kout = keys_out.as<T>();

  size_t temp_bytes = 0;
  CUDA_CHECK(cub_sort<T>(algo, nullptr, temp_bytes, keys_in, nullptr, nullptr, nullptr, items));
  const DeviceBuffer temp(std::max<size_t>(temp_bytes, 1));
  auto call_on = [&](cudaStream_t stream) {
    size_t bytes = temp_bytes;
    CUDA_CHECK(cub_sort<T>(algo, temp.get(), bytes, keys_in, kout, vin, vout, items, stream));
  };
  auto call = [&]() { call_on(0); };

  // Outputs poisoned (every byte 0xcd: never a pair value of an index below 2^31), then one
  // call checked by the sort's properties.
  CUDA_CHECK(cudaMemset(kout, 0xcd, n * sizeof(T)));
  if (pairs) {
    CUDA_CHECK(cudaMemset(vout, 0xcd, n * sizeof(V)));
  }
  call();
  CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<T> got_keys(n);
  CUDA_CHECK(cudaMemcpy(got_keys.data(), kout, n * sizeof(T), cudaMemcpyDeviceToHost));
  std::string problem;
  if (pairs) {
    std::vector<V> got_values(n);
    CUDA_CHECK(cudaMemcpy(got_values.data(), vout, n * sizeof(V), cudaMemcpyDeviceToHost));
    problem = check_sorted_pairs(host_in, got_keys, got_values);
  } else {
    problem = check_sorted_keys(fingerprint, key, got_keys);
  }
  if (!problem.empty()) {
    std::fprintf(stderr, "check %s %s %zu: %s\n", algo_name(algo), Elem<T>::name, n,
                 problem.c_str());
  }

  auto finish = [&]() { CUDA_CHECK(cudaStreamSynchronize(0)); };
  time_and_print(algo, Elem<T>::name, n, problem.empty(), call, finish, opt, scrub);
  if (opt.launches) {
    time_launches(algo, Elem<T>::name, n, call_on, opt, scrub);
  }
}

// ---------------------------------------------------------------------------------------------
// The device-wide toolbox (partition, unique, run-length encoding, reduce-by-key, segmented sum,
// histogram): what xwarp's `lab/src/bench/toolbox.rs` times on the same inputs

/// `[lower, upper)` of the histogram cases: 256 even bins.
template <typename T>
std::pair<T, T> histogram_range() {
  if constexpr (std::is_floating_point_v<T>) {
    return {static_cast<T>(-1048576.0), static_cast<T>(1048576.0)};
  } else if constexpr (std::is_same_v<T, int32_t>) {
    return {-(int32_t{1} << 29), int32_t{1} << 29};
  } else if constexpr (std::is_same_v<T, uint32_t>) {
    return {uint32_t{1} << 30, uint32_t{3} << 30};
  } else if constexpr (std::is_same_v<T, int64_t>) {
    return {-(int64_t{1} << 61), int64_t{1} << 61};
  } else {
    return {uint64_t{1} << 62, uint64_t{3} << 62};
  }
}

constexpr int kHistogramBins = 256;

/// The histogram cases run on 32-bit samples and doubles (CUB's 64-bit integer binning is left
/// out of the baseline).
template <typename T>
constexpr bool kHistogramTimed = sizeof(T) == 4 || std::is_floating_point_v<T>;

/// The bin of `x` as xwarp defines it (integers exactly; floats by the rounded product with
/// bins / (upper - lower)), or -1 outside [lower, upper).
template <typename T>
int64_t host_bin(T x, T lower, T upper) {
  if (!(x >= lower && x < upper)) {
    return -1;
  }
  if constexpr (std::is_floating_point_v<T>) {
    const T scale = static_cast<T>(kHistogramBins) / (upper - lower);
    const T b = std::floor((x - lower) * scale);
    return std::min<int64_t>(static_cast<int64_t>(b), kHistogramBins - 1);
  } else {
    using U = std::make_unsigned_t<T>;
    const unsigned __int128 range = static_cast<U>(static_cast<U>(upper) - static_cast<U>(lower));
    const unsigned __int128 d = static_cast<U>(static_cast<U>(x) - static_cast<U>(lower));
    return static_cast<int64_t>(d * kHistogramBins / range);
  }
}

/// Calls `f(start, end)` for each run of equal consecutive values (CUB's equality: `==`).
template <typename T, typename F>
void for_each_run(const std::vector<T>& in, F&& f) {
  size_t start = 0;
  for (size_t i = 1; i <= in.size(); ++i) {
    if (i == in.size() || !(in[i] == in[i - 1])) {
      f(start, i);
      start = i;
    }
  }
}

/// The sum of in[start .. end): wrapping for integers; for floats a long double with the sum of
/// magnitudes (for float_close).
template <typename T>
std::pair<long double, long double> host_sum(const std::vector<T>& in, size_t start, size_t end,
                                             T* wrapped) {
  long double sum = 0.0L;
  long double sum_abs = 0.0L;
  Bits<T> bits = 0;
  for (size_t i = start; i < end; ++i) {
    sum += static_cast<long double>(in[i]);
    sum_abs += std::fabs(static_cast<long double>(in[i]));
    bits = static_cast<Bits<T>>(bits + bit_cast<Bits<T>>(in[i]));
  }
  *wrapped = bit_cast<T>(bits);
  return {sum, sum_abs};
}

/// Whether a device sum matches the host's (exact for integers, close for floats).
template <typename T>
bool sum_ok(T got, const std::vector<T>& in, size_t start, size_t end) {
  T wrapped;
  const auto [sum, sum_abs] = host_sum(in, start, end, &wrapped);
  if constexpr (std::is_floating_point_v<T>) {
    return float_close(got, sum, sum_abs, end - start);
  } else {
    return got == wrapped;
  }
}

/// Copies `count` elements of `T` from the device.
template <typename T>
std::vector<T> download(const void* src, size_t count) {
  std::vector<T> v(count);
  if (count > 0) {
    CUDA_CHECK(cudaMemcpy(v.data(), src, count * sizeof(T), cudaMemcpyDeviceToHost));
  }
  return v;
}

/// One toolbox case's outputs checked against the host: "" when right, else what differs.
template <typename T>
std::string check_toolbox(Algo algo, const std::vector<T>& in, const DeviceBuffer& out,
                          const DeviceBuffer& out2, const DeviceBuffer& lengths,
                          const DeviceBuffer& hist, const DeviceBuffer& count,
                          const std::vector<int>& offsets) {
  const size_t n = in.size();
  const int64_t runs = download<int64_t>(count.get(), 1)[0];
  const bool counted = algo == Algo::PartitionIf || algo == Algo::Unique ||
                       algo == Algo::RunLengthEncode || algo == Algo::ReduceByKey;
  if (counted && (runs < 0 || static_cast<uint64_t>(runs) > n)) {
    return "count " + std::to_string(runs) + " out of range";
  }
  const size_t m = counted ? static_cast<size_t>(runs) : 0;
  switch (algo) {
    case Algo::PartitionIf: {
      std::vector<T> want;
      std::vector<T> rejected;
      for (T v : in) {
        (v > Elem<T>::threshold ? want : rejected).push_back(v);
      }
      if (m != want.size()) {
        return "count " + std::to_string(m) + ", host " + std::to_string(want.size());
      }
      want.insert(want.end(), rejected.rbegin(), rejected.rend());
      return check_bits("element", want, download<T>(out.get(), n));
    }
    case Algo::Unique:
    case Algo::RunLengthEncode:
    case Algo::ReduceByKey: {
      std::vector<T> keys;
      std::vector<std::pair<size_t, size_t>> spans;
      for_each_run(in, [&](size_t start, size_t end) {
        keys.push_back(in[start]);
        if (algo != Algo::Unique) spans.emplace_back(start, end);
      });
      if (m != keys.size()) {
        return "runs " + std::to_string(m) + ", host " + std::to_string(keys.size());
      }
      std::string problem = check_bits("key", keys, download<T>(out.get(), m));
      if (!problem.empty() || algo == Algo::Unique) {
        return problem;
      }
      if (algo == Algo::RunLengthEncode) {
        const std::vector<int> got = download<int>(lengths.get(), m);
        for (size_t r = 0; r < m; ++r) {
          if (static_cast<size_t>(got[r]) != spans[r].second - spans[r].first) {
            return "length " + std::to_string(r) + ": " + std::to_string(got[r]);
          }
        }
        return "";
      }
      const std::vector<T> got = download<T>(out2.get(), m);
      for (size_t r = 0; r < m; ++r) {
        if (!sum_ok(got[r], in, spans[r].first, spans[r].second)) {
          return "sum of run " + std::to_string(r) + ": " + show(got[r]);
        }
      }
      return "";
    }
    case Algo::SegmentedSum16:
    case Algo::SegmentedSum1: {
      const size_t segments = offsets.size() - 1;
      const std::vector<T> got = download<T>(out.get(), segments);
      for (size_t s = 0; s < segments; ++s) {
        if (!sum_ok(got[s], in, static_cast<size_t>(offsets[s]), static_cast<size_t>(offsets[s + 1]))) {
          return "sum of segment " + std::to_string(s) + ": " + show(got[s]);
        }
      }
      return "";
    }
    case Algo::HistogramEven256:
    case Algo::HistogramEvenOneBin: {
      const auto range = histogram_range<T>();
      std::vector<int64_t> want(kHistogramBins, 0);
      for (T v : in) {
        const int64_t b = host_bin(v, range.first, range.second);
        if (b >= 0) ++want[static_cast<size_t>(b)];
      }
      const std::vector<int> got = download<int>(hist.get(), kHistogramBins);
      int64_t total_want = 0;
      int64_t total_got = 0;
      for (int b = 0; b < kHistogramBins; ++b) {
        total_want += want[b];
        total_got += got[b];
        // CUB rounds float bins its own way: a sample on a bin's edge may land next door.
        const int64_t slack = std::is_floating_point_v<T> ? want[b] / 1000 + 2 : 0;
        if (std::llabs(got[b] - want[b]) > slack) {
          return "bin " + std::to_string(b) + ": " + std::to_string(got[b]) + ", host " +
                 std::to_string(want[b]);
        }
      }
      if (total_got != total_want) {
        return "total " + std::to_string(total_got) + ", host " + std::to_string(total_want);
      }
      return "";
    }
    default: return "not a toolbox algorithm";
  }
}

/// Checks, warms up and times one toolbox case, and prints its `case` line. The one-bin
/// histogram runs on an input of its own (n copies of lower + (upper - lower) / 3).
template <typename T>
void run_toolbox_case(Algo algo, const std::vector<T>& random_in, const DeviceBuffer& random_dev,
                      const Options& opt, Scrubber& scrub) {
  const size_t n = random_in.size();
  const bool histogram = algo == Algo::HistogramEven256 || algo == Algo::HistogramEvenOneBin;
  if constexpr (!kHistogramTimed<T>) {
    if (histogram) {
      print_skip(algo, Elem<T>::name, n, "64-bit integer samples are not timed");
      return;
    }
  }
  if (n > static_cast<size_t>(std::numeric_limits<int>::max())) {
    print_skip(algo, Elem<T>::name, n, "more items than a 32-bit count holds");
    return;
  }
  const int items = static_cast<int>(n);
  const auto range = histogram_range<T>();
  const bool one_bin = algo == Algo::HistogramEvenOneBin;
  std::vector<T> own;
  std::optional<DeviceBuffer> own_dev;
  if (one_bin) {
    own.assign(n, static_cast<T>(range.first + (range.second - range.first) / static_cast<T>(3)));
    own_dev.emplace(n * sizeof(T));
    CUDA_CHECK(cudaMemcpy(own_dev->get(), own.data(), n * sizeof(T), cudaMemcpyHostToDevice));
  }
  const std::vector<T>& host_in = one_bin ? own : random_in;
  const T* in = one_bin ? own_dev->as<T>() : random_dev.as<T>();

  std::vector<int> offsets;
  if (algo == Algo::SegmentedSum16) {
    for (size_t s = 0; s * 16 < n; ++s) offsets.push_back(static_cast<int>(s * 16));
    offsets.push_back(items);
  } else {
    offsets = {0, items};
  }
  const int segments = static_cast<int>(offsets.size()) - 1;
  const DeviceBuffer dev_offsets(offsets.size() * sizeof(int));
  CUDA_CHECK(cudaMemcpy(dev_offsets.get(), offsets.data(), offsets.size() * sizeof(int),
                        cudaMemcpyHostToDevice));
  const DeviceBuffer out(n * sizeof(T));
  const DeviceBuffer out2(algo == Algo::ReduceByKey ? n * sizeof(T) : 0);
  const DeviceBuffer lengths(algo == Algo::RunLengthEncode ? n * sizeof(int) : 0);
  const DeviceBuffer hist(kHistogramBins * sizeof(int));
  const DeviceBuffer count(sizeof(int64_t));
  T* o = out.as<T>();
  T* o2 = out2.as<T>();
  int* len = lengths.as<int>();
  int* h = hist.as<int>();
  int64_t* c = count.as<int64_t>();
  const int* off = dev_offsets.as<int>();

  auto invoke = [&](void* temp, size_t& bytes) -> cudaError_t {
    switch (algo) {
      case Algo::PartitionIf:
        return cub::DevicePartition::If(temp, bytes, in, o, c, items,
                                        GreaterThan<T>{Elem<T>::threshold});
      case Algo::Unique: return cub::DeviceSelect::Unique(temp, bytes, in, o, c, items);
      case Algo::RunLengthEncode:
        return cub::DeviceRunLengthEncode::Encode(temp, bytes, in, o, len, c, items);
      case Algo::ReduceByKey:
        return cub::DeviceReduce::ReduceByKey(temp, bytes, in, o, in, o2, c,
                                              ::cuda::std::plus<T>{}, items);
      case Algo::SegmentedSum16:
      case Algo::SegmentedSum1:
        return cub::DeviceSegmentedReduce::Sum(temp, bytes, in, o, segments, off, off + 1);
      case Algo::HistogramEven256:
      case Algo::HistogramEvenOneBin:
        if constexpr (kHistogramTimed<T>) {
          return cub::DeviceHistogram::HistogramEven(temp, bytes, in, h, kHistogramBins + 1,
                                                     range.first, range.second, items);
        }
        break;
      default: break;
    }
    return cudaErrorInvalidValue;
  };

  size_t temp_bytes = 0;
  CUDA_CHECK(invoke(nullptr, temp_bytes));
  const DeviceBuffer temp(std::max<size_t>(temp_bytes, 1));
  auto call = [&]() {
    size_t bytes = temp_bytes;
    CUDA_CHECK(invoke(temp.get(), bytes));
  };

  // Outputs poisoned (every byte 0xcd), then one call checked against the host.
  CUDA_CHECK(cudaMemset(o, 0xcd, n * sizeof(T)));
  CUDA_CHECK(cudaMemset(h, 0xcd, kHistogramBins * sizeof(int)));
  CUDA_CHECK(cudaMemset(c, 0, sizeof(int64_t)));
  call();
  CUDA_CHECK(cudaDeviceSynchronize());
  const std::string problem = check_toolbox(algo, host_in, out, out2, lengths, hist, count, offsets);
  if (!problem.empty()) {
    std::fprintf(stderr, "check %s %s %zu: %s\n", algo_name(algo), Elem<T>::name, n,
                 problem.c_str());
  }

  // Host wall: the call plus what makes its result usable on the host (the count, else a
  // synchronisation).
  const bool counted = algo == Algo::PartitionIf || algo == Algo::Unique ||
                       algo == Algo::RunLengthEncode || algo == Algo::ReduceByKey;
  int64_t runs = 0;
  auto finish = [&]() {
    if (counted) {
      CUDA_CHECK(cudaMemcpy(&runs, c, sizeof runs, cudaMemcpyDeviceToHost));
    } else {
      CUDA_CHECK(cudaStreamSynchronize(0));
    }
  };
  time_and_print(algo, Elem<T>::name, n, problem.empty(), call, finish, opt, scrub);
}

/// Every size and algorithm for one element type.
template <typename T>
void run_type(const Options& opt, Scrubber& scrub) {
  for (const uint64_t n64 : opt.sizes) {
    const size_t n = static_cast<size_t>(n64);
    try {
      const std::vector<T> host_in = make_input<T>(opt.seed, n);
      const DeviceBuffer dev_in(n * sizeof(T));
      CUDA_CHECK(cudaMemcpy(dev_in.get(), host_in.data(), n * sizeof(T), cudaMemcpyHostToDevice));
      // The fingerprint of the input's keys the key sort is checked against, made at the
      // first sort.
      const FingerprintKey key(opt.seed ^ n);
      std::optional<Fingerprint> fingerprint_of_input;
      for (const Algo algo : opt.algos) {
        try {
          if (is_sort(algo)) {
            if (!fingerprint_of_input) {
              fingerprint_of_input = fingerprint(host_in.data(), n, key);
            }
            run_sort_case<T>(algo, host_in, dev_in, *fingerprint_of_input, key, opt, scrub);
          } else if (is_toolbox(algo)) {
            run_toolbox_case<T>(algo, host_in, dev_in, opt, scrub);
          } else {
            run_case<T>(algo, host_in, dev_in, opt, scrub);
          }
        } catch (const OutOfMemory& oom) {
          print_skip(algo, Elem<T>::name, n64, oom.reason);
        } catch (const std::bad_alloc&) {
          print_skip(algo, Elem<T>::name, n64, "host out of memory");
        }
      }
    } catch (const OutOfMemory& oom) {
      for (const Algo algo : opt.algos) {
        print_skip(algo, Elem<T>::name, n64, oom.reason + " (input)");
      }
    } catch (const std::bad_alloc&) {
      for (const Algo algo : opt.algos) {
        print_skip(algo, Elem<T>::name, n64, "host out of memory (input)");
      }
    }
  }
}

int run(const Options& opt) {
  const std::string self_test = self_test_checks();
  if (!self_test.empty()) {
    throw Fatal{"the sort checks' self-test failed: " + self_test};
  }
  if (opt.self_test_checks) {
    std::printf("# checks self-test ok\n");
    return 0;
  }
  if (opt.dump_inputs > 0) {
    for (const std::string& type : opt.types) {
      with_type(type, [&](auto tag) { dump_inputs<decltype(tag)>(opt); });
    }
    return 0;
  }

  int devices = 0;
  const cudaError_t status = cudaGetDeviceCount(&devices);
  if (status != cudaSuccess) {
    throw Fatal{std::string("no CUDA device: ") + cudaGetErrorName(status) + " (" +
                cudaGetErrorString(status) + ")"};
  }
  if (devices == 0) {
    throw Fatal{"no CUDA device"};
  }
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  cudaDeviceProp prop;
  CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  int runtime = 0;
  CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
  std::printf("# device %s cc %d.%d\n", prop.name, prop.major, prop.minor);
  std::printf("# cub %d.%d.%d\n", CUB_MAJOR_VERSION, CUB_MINOR_VERSION, CUB_SUBMINOR_VERSION);
  std::printf("# cuda %d.%d\n", runtime / 1000, runtime % 1000 / 10);
  std::printf("# checks self-test ok\n");
  std::fflush(stdout);

  Scrubber scrub(opt.scrub_bytes);
  for (const std::string& type : opt.types) {
    with_type(type, [&](auto tag) { run_type<decltype(tag)>(opt, scrub); });
  }
  return 0;
}

#endif  // CUB_BENCH_HOST_ONLY

}  // namespace

#ifdef CUB_BENCH_HOST_ONLY
// Without CUDA: the generator (--dump-inputs) and the checks' self-test only.
int main(int argc, char** argv) {
  Options opt;
  try {
    opt = parse_args(argc, argv);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "cub_bench: %s\n%s", e.reason.c_str(), kUsage);
    return 2;
  }
  const std::string problem = self_test_checks();
  if (!problem.empty()) {
    std::fprintf(stderr, "error the sort checks' self-test failed: %s\n", problem.c_str());
    return 1;
  }
  std::printf("# checks self-test ok\n");
  if (opt.dump_inputs > 0) {
    for (const std::string& type : opt.types) {
      with_type(type, [&](auto tag) { dump_inputs<decltype(tag)>(opt); });
    }
  }
  return 0;
}
#else
int main(int argc, char** argv) {
  Options opt;
  try {
    opt = parse_args(argc, argv);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "cub_bench: %s\n%s", e.reason.c_str(), kUsage);
    return 2;
  }
  try {
    return run(opt);
  } catch (const Fatal& e) {
    std::fprintf(stderr, "error %s\n", e.reason.c_str());
  } catch (const OutOfMemory& e) {
    std::fprintf(stderr, "error %s\n", e.reason.c_str());  // the scrub buffer did not fit
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "error host out of memory\n");
  }
  return 1;
}
#endif  // CUB_BENCH_HOST_ONLY
