//! Inputs, element types and the throughput chains of the benchmark.

use super::check::PairValue;
use super::{measure_gpu, Algo, ChainRow, Ctx, Reference, Stats, HARD_CHECK_MAX};
use xwarp::cpu;
use xwarp::cpu::reduce::Reduce;
use xwarp::cpu::stencil::POINTS;
use xwarp::device::{Device, DeviceVec};
use xwarp::element::{ElemKind, Element, HardValues, Rng};
use xwarp::error::{Error, Result};
use xwarp::reduce::ReduceOp;
use xwarp::stencil::{self, StencilVariant};
use xwarp::throughput::{self, ChainOp};
use xwarp::vote::PredicateElement;

/// The element types the benchmark runs: every kernel type.
pub(crate) trait BenchElem: Reduce + PredicateElement + xwarp::histogram::Sample {
    /// The compaction and vote threshold: about half of the random inputs lie above it.
    const THRESHOLD: Self;

    /// The values of the pair sort with keys of this type ([`pair_values`]): `u32` for 4-byte
    /// keys, `u64` for 8-byte ones.
    type PairValue: PairValue;

    /// Random weights and the CPU reference of the moving average over `input`; `None` for
    /// types without a stencil.
    fn stencil_reference(rng: &mut Rng, input: &[Self]) -> Option<([Self; POINTS], Vec<Self>)>;

    /// Hard weights of `hard`'s values ([`crate::validate::stencil::hard_weights_and_input`])
    /// and the CPU reference of the moving average over `input`; `None` for types without a
    /// stencil.
    fn hard_stencil_reference(
        rng: &mut Rng,
        hard: HardValues,
        input: &[Self],
    ) -> Option<([Self; POINTS], Vec<Self>)>;

    /// [`stencil::moving_average`] where the type has it.
    fn moving_average(
        dev: &dyn Device,
        variant: StencilVariant,
        weights: [Self; POINTS],
        input: &DeviceVec<Self>,
        output: &mut DeviceVec<Self>,
    ) -> Result<()>;
}

macro_rules! int_bench_elem {
    ($($t:ty = $th:expr, $v:ty);*) => {$(
        impl BenchElem for $t {
            const THRESHOLD: Self = $th;
            type PairValue = $v;
            fn stencil_reference(_: &mut Rng, _: &[Self]) -> Option<([Self; POINTS], Vec<Self>)> {
                None
            }
            fn hard_stencil_reference(
                _: &mut Rng,
                _: HardValues,
                _: &[Self],
            ) -> Option<([Self; POINTS], Vec<Self>)> {
                None
            }
            fn moving_average(
                _: &dyn Device,
                _: StencilVariant,
                _: [Self; POINTS],
                _: &DeviceVec<Self>,
                _: &mut DeviceVec<Self>,
            ) -> Result<()> {
                Err(Error::invalid("elem", Self::KIND, "f32 or f64 for the stencil"))
            }
        }
    )*};
}
int_bench_elem!(i32 = 0, u32; u32 = 1 << 31, u32; i64 = 0, u64; u64 = 1 << 63, u64);

macro_rules! float_bench_elem {
    ($($t:ty, $v:ty);*) => {$(
        impl BenchElem for $t {
            const THRESHOLD: Self = 0.0;
            type PairValue = $v;
            fn stencil_reference(
                rng: &mut Rng,
                input: &[Self],
            ) -> Option<([Self; POINTS], Vec<Self>)> {
                let weights: [Self; POINTS] = std::array::from_fn(|_| Self::random(rng));
                Some((weights, cpu::stencil::moving_average(weights, input)))
            }
            fn hard_stencil_reference(
                rng: &mut Rng,
                hard: HardValues,
                input: &[Self],
            ) -> Option<([Self; POINTS], Vec<Self>)> {
                let kind = crate::validate::HardInput::Mixed;
                let (weights, _) =
                    crate::validate::stencil::hard_weights_and_input(kind, hard, 0, rng);
                Some((weights, cpu::stencil::moving_average(weights, input)))
            }
            fn moving_average(
                dev: &dyn Device,
                variant: StencilVariant,
                weights: [Self; POINTS],
                input: &DeviceVec<Self>,
                output: &mut DeviceVec<Self>,
            ) -> Result<()> {
                stencil::moving_average(dev, variant, weights, input, output)
            }
        }
    )*};
}
float_bench_elem!(f32, u32; f64, u64);

/// Calls `f::<T>(args)` with `T` the Rust type of an [`xwarp::ElemKind`].
macro_rules! with_bench_elem {
    ($kind:expr, $f:ident ( $($arg:expr),* $(,)? )) => {
        match $kind {
            xwarp::ElemKind::I32 => $f::<i32>($($arg),*),
            xwarp::ElemKind::U32 => $f::<u32>($($arg),*),
            xwarp::ElemKind::F32 => $f::<f32>($($arg),*),
            xwarp::ElemKind::I64 => $f::<i64>($($arg),*),
            xwarp::ElemKind::U64 => $f::<u64>($($arg),*),
            xwarp::ElemKind::F64 => $f::<f64>($($arg),*),
        }
    };
}
pub(crate) use with_bench_elem;

/// `n` random values from `seed`: the values the CUB program draws for the same seed
/// (`benches/cub/cub_bench.cu` runs the same generator), so both sides time the same data.
/// Drawn on every core ([`super::check::random_values`]).
pub(crate) fn random_input<T: Element>(seed: u64, n: usize) -> Vec<T> {
    super::check::random_values(seed, n)
}

/// The hard inputs a float case is checked on before it is timed: the timed inputs stay the
/// representative ones CUB times too, and these catch what they never hold.
pub(crate) struct HardInputs<T> {
    /// Finite hard values below 2^(emax - 23) ([`HardValues::huge`]), subnormals included
    /// where every device keeps them: for what sums (a sum that meets ±∞ or NaN shows little of
    /// its other inputs).
    finite: Vec<T>,
    /// The same mix with NaN payloads and ±∞: for what only compares or moves values.
    all: Vec<T>,
    /// What `finite` holds.
    hard: HardValues,
}

impl<T: BenchElem> HardInputs<T> {
    /// Hard inputs of `n` elements (at most [`HARD_CHECK_MAX`]) from `seed` for the devices
    /// `devices`; `None` for integer types, whose timed inputs are already random bits.
    pub(crate) fn new(devices: &[(String, &dyn Device)], seed: u64, n: usize) -> Option<Self> {
        if !matches!(T::KIND, ElemKind::F32 | ElemKind::F64) {
            return None;
        }
        let n = n.min(HARD_CHECK_MAX);
        // Without the largest magnitudes: sums of up to HARD_CHECK_MAX of them stay numbers.
        let hard = crate::validate::hard_values(devices, T::KIND, false).without_huge();
        let all = crate::validate::hard_values(devices, T::KIND, true);
        let mut rng = Rng::new(seed ^ 0x0a4d_0a4d);
        Some(HardInputs {
            finite: rng.hard_vec(n, hard),
            all: rng.hard_vec(n, all),
            hard,
        })
    }

    /// Whether `algo` adds or multiplies values (gets finite inputs, and a NaN result matches
    /// any NaN).
    pub(super) fn sums(algo: Algo) -> bool {
        matches!(
            algo,
            Algo::Reduce(ReduceOp::Sum) | Algo::Scan(_) | Algo::Stencil(_)
        )
    }

    /// The input `algo` is checked on.
    pub(crate) fn input(&self, algo: Algo) -> &[T] {
        if Self::sums(algo) {
            &self.finite
        } else {
            &self.all
        }
    }

    /// The CPU reference for `algo` on [`HardInputs::input`] (the stencil with hard weights).
    pub(crate) fn reference(&self, algo: Algo, seed: u64) -> Reference<T> {
        let input = self.input(algo);
        Reference::with_weights(algo, input, || {
            T::hard_stencil_reference(&mut Rng::new(seed ^ 0x57e4_0a4d), self.hard, input)
        })
    }
}

/// The read roofline's folds of `input`, as the kernel writes them.
pub(crate) fn read_folds<T: Element>(input: &[T]) -> Vec<u32> {
    cpu::roofline::read(input)
}

/// How many folds the read roofline writes for `n` elements of `T`.
pub(crate) fn read_folds_len<T: Element>(n: usize) -> usize {
    xwarp::roofline::read_folds(n, T::KIND)
}

/// The chains of the throughput table.
const OPS: [ChainOp; 5] = [
    ChainOp::Broadcast,
    ChainOp::Up,
    ChainOp::Down,
    ChainOp::Xor,
    ChainOp::Ballot,
];

/// Chains per backend in the throughput table.
pub(crate) const CHAIN_OPS: usize = OPS.len();

/// Threads of the checked run (the CPU model runs every one of its operations).
const CHECK_THREADS: usize = 4096 + 96;

/// The throughput table: each op's chain on every backend, checked on a small grid against
/// the CPU model, then timed on `chain_threads` threads.
pub(super) fn chains(ctx: &mut Ctx<'_>) {
    let (iters, threads) = (ctx.cfg.chain_iters, ctx.cfg.chain_threads);
    for (i, (label, dev)) in ctx.devices.iter().enumerate() {
        if ctx.report.chains.iter().any(|r| r.backend == *label) {
            // In the report already (--resume).
            ctx.p.done += OPS.len();
            continue;
        }
        for op in OPS {
            let what = format!("{label} chain {} x{iters}", op.name());
            ctx.step(what.clone());
            match chain(*dev, ctx, i, op) {
                Ok(Ok(gpu)) => ctx.report.chains.push(ChainRow {
                    backend: label.clone(),
                    op: op.name().to_string(),
                    threads,
                    iters,
                    gpu,
                    ops_per_s: throughput::ops(op, iters, threads) as f64 / gpu.median,
                }),
                Ok(Err(m)) => ctx.report.failures.push(format!("{what}: {m}")),
                Err(e) => ctx.report.skipped.push(format!("{what}: {e}")),
            }
        }
    }
}

fn chain(
    dev: &dyn Device,
    ctx: &Ctx<'_>,
    index: usize,
    op: ChainOp,
) -> Result<std::result::Result<Stats, String>> {
    let cfg = ctx.cfg;
    let seed = cfg.seed as u32 ^ 0x000c_4a1e;
    let mut small = DeviceVec::<u32>::alloc(dev, CHECK_THREADS)?;
    small.fill(dev, 0xcdcd_cdcd)?;
    throughput::chain(dev, op, cfg.chain_iters.min(64), seed, &mut small)?;
    let want = cpu::throughput::chain(
        op,
        cfg.chain_iters.min(64),
        seed,
        chain_subgroup(dev),
        CHECK_THREADS,
    );
    if let Err(m) = super::compare(&want, &small.to_vec(dev)?) {
        return Ok(Err(m));
    }
    let mut out = DeviceVec::<u32>::alloc(dev, cfg.chain_threads)?;
    let gpu = measure_gpu(dev, ctx.scrubs[index].as_ref(), cfg, &mut |finish| {
        throughput::chain(dev, op, cfg.chain_iters, seed, &mut out)?;
        if finish {
            dev.synchronize()?;
        }
        Ok(())
    })?;
    Ok(Ok(gpu))
}

/// The subgroup size the chain kernels run with on `dev`: 32 on CUDA, the device's (pinned)
/// subgroup size on Vulkan.
fn chain_subgroup(dev: &dyn Device) -> u32 {
    match dev.info().backend {
        xwarp::BackendKind::Cuda => 32,
        xwarp::BackendKind::Vulkan => dev.info().subgroup_size,
    }
}

/// The values of a pair sort of `n` keys: [`PairValue::of_index`] of the indices
/// `0, 1, ..., n - 1`, the values the CUB program's `SortPairs` gets too: the `u32` indices for
/// 4-byte keys, and for 8-byte keys `u64` values whose two words both encode the index
/// (`(i << 32) | (i ^ 0x9e37_79b9)`). After the sort they name the keys' input places, so a
/// wrong or unstable move shows in them, in either word of a `u64`.
pub(crate) fn pair_values<V: PairValue>(n: usize) -> Vec<V> {
    (0..n).map(V::of_index).collect()
}
