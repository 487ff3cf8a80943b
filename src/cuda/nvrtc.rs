//! NVRTC and modules: the embedded kernel sources, their compilation for the device's
//! architecture, and the cache of loaded kernels with what the driver says about them.

use super::probe::attribute;
use super::{cuda_err, lock, CudaDevice};
#[cfg(doc)]
use crate::device::Device;
use crate::device::{kernel_label, Kernel, KernelStats};
use crate::element::ElemKind;
use crate::error::{Error, Result};
use cudarc::driver::{sys, CudaFunction, DriverError};
use cudarc::nvrtc::{self, CompileError, CompileOptions};
use std::collections::BTreeSet;
use std::ffi::c_int;

/// Shared helpers, prepended to every kernel source.
const COMMON: &str = include_str!("../../cuda/common.cuh");

// `SOURCES`: every `cuda/*.cu`, as (file stem, text); `HEADERS`: every `cuda/*.cuh` but
// common.cuh, as (file name, text). Written by build.rs.
include!(concat!(env!("OUT_DIR"), "/cuda_sources.rs"));

/// The embedded source of kernel `name`, if there is one.
fn source(name: &str) -> Option<&'static str> {
    SOURCES.iter().find(|(n, _)| *n == name).map(|(_, s)| *s)
}

/// Most kernel parameters asked of `cuFuncGetParamInfo` before giving up.
const MAX_KERNEL_PARAMS: usize = 256;
/// First driver (12.4) with `cuFuncGetParamInfo`.
const DRIVER_WITH_PARAM_INFO: c_int = 12040;

/// The number of parameters the PTX entry `name` declares (`.param` lines of its parameter
/// list), or `None` when the entry is not found.
fn entry_param_count(ptx: &str, name: &str) -> Option<usize> {
    let start = ptx.find(&format!(".entry {name}("))?;
    let list = &ptx[start..];
    let end = list.find(')')?;
    Some(list[..end].matches(".param").count())
}

/// Whether `s` is a C identifier (and so a safe macro name).
fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The one-token name of the element type that `XW_T` expands to in kernel sources.
const ELEM_TYPEDEF: &str = "xw_elem_t";

/// Replaces each `#include "NAME.cuh"` line with that embedded header (NVRTC sees one source),
/// with `#line` markers so compile errors name the right file and line.
fn expand_includes(text: &str, file: &str, depth: u32) -> Result<String> {
    let mut out = String::with_capacity(text.len());
    for (number, line) in text.lines().enumerate() {
        let included = line
            .trim()
            .strip_prefix("#include \"")
            .and_then(|rest| rest.strip_suffix('"'));
        match included {
            Some(name) => {
                let header = HEADERS
                    .iter()
                    .find(|(n, _)| *n == name)
                    .map(|(_, t)| *t)
                    .filter(|_| depth < 8)
                    .ok_or_else(|| Error::MissingKernel {
                        kernel: file.to_string(),
                        variant: format!("the header {name} (cuda/{name} is not embedded)"),
                    })?;
                out.push_str(&format!("#line 1 \"{name}\"\n"));
                out.push_str(&expand_includes(header, name, depth + 1)?);
                out.push_str(&format!("#line {} \"{file}\"\n", number + 2));
            }
            None => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    Ok(out)
}

/// Compiles kernel `k` to PTX for virtual architecture `compute_<arch>`.
fn compile(k: &Kernel<'_>, arch: u32) -> Result<nvrtc::Ptx> {
    let body = source(k.name).ok_or_else(|| Error::MissingKernel {
        kernel: k.name.to_string(),
        variant: format!("{k} on CUDA (no cuda/{}.cu is embedded)", k.name),
    })?;
    let mut options = vec![
        format!("--gpu-architecture=compute_{arch}"),
        "-std=c++17".to_string(),
        // XW_T must be one token: kernels write `XW_T(0)`, which C++ rejects for
        // `unsigned int(0)`; so it names a typedef of the CUDA type, declared first below.
        format!("-DXW_T={ELEM_TYPEDEF}"),
        // The element's size, for the preprocessor (launch bounds by type).
        format!("-DXW_ELEM_BYTES={}", k.elem.size()),
    ];
    for &(name, value) in k.consts {
        if !is_identifier(name) {
            return Err(Error::invalid(
                "kernel.consts",
                name,
                "C identifiers ([A-Za-z_][A-Za-z0-9_]*)",
            ));
        }
        options.push(format!("-D{name}={value}"));
    }
    let common: String = COMMON
        .lines()
        .filter(|line| line.trim() != "#pragma once")
        .map(|line| format!("{line}\n"))
        .collect();
    let file = format!("{}.cu", k.name);
    let src = format!(
        "typedef {} {ELEM_TYPEDEF};\n#line 1 \"common.cuh\"\n{common}#line 1 \"{file}\"\n{}",
        k.elem.cuda_type(),
        expand_includes(body, &file, 0)?
    );
    let opts = CompileOptions {
        options,
        name: Some(format!("{}.cu", k.name)),
        ..Default::default()
    };
    nvrtc::compile_ptx_with_opts(src, opts).map_err(|e| Error::Compile {
        kernel: k.to_string(),
        log: match e {
            CompileError::CompileError {
                nvrtc,
                options,
                log,
            } => format!(
                "{nvrtc:?} (options {options:?}):\n{}",
                log.to_string_lossy().trim_end()
            ),
            other => format!("{other:?}"),
        },
    })
}

/// Identity of a compiled kernel variant.
#[derive(Clone, PartialEq, Eq, Hash)]
pub(super) struct KernelKey {
    name: &'static str,
    elem: ElemKind,
    consts: Vec<(&'static str, u32)>,
}

/// A loaded kernel and what the driver says about its parameters.
#[derive(Clone)]
pub(super) struct Loaded {
    pub(super) func: CudaFunction,
    /// Size of each declared parameter, in order, when the driver can tell.
    pub(super) params: Option<Vec<usize>>,
}

/// A loaded kernel in the device's cache, with the block sizes it was launched with (for the
/// occupancy [`Device::kernel_stats`] reports).
pub(super) struct Cached {
    pub(super) loaded: Loaded,
    pub(super) blocks: BTreeSet<u32>,
}

impl CudaDevice {
    /// The loaded kernel for `k`, compiling and loading it on first use; notes that it is
    /// launched with `block` threads per block.
    pub(super) fn function(&self, k: &Kernel<'_>, block: u32) -> Result<Loaded> {
        let key = KernelKey {
            name: k.name,
            elem: k.elem,
            consts: k.consts.to_vec(),
        };
        if let Some(cached) = lock(&self.kernels).get_mut(&key) {
            cached.blocks.insert(block);
            return Ok(cached.loaded.clone());
        }
        // Loading a module may wait for the device's work to finish: a timed span's gate
        // must not hold that work back ([`super::timing`]), so it opens first, with this
        // thread's turn taken (a span that starts meanwhile leaves its gate open).
        let _turn = self.take_turn();
        self.open_gate();
        // Compile without holding the lock, so launches of cached kernels go on meanwhile.
        let loaded = self.build(k)?;
        let mut kernels = lock(&self.kernels);
        let cached = kernels.entry(key).or_insert(Cached {
            loaded,
            blocks: BTreeSet::new(),
        });
        cached.blocks.insert(block);
        Ok(cached.loaded.clone())
    }

    /// What the driver says about one loaded kernel launched with `block` threads per block
    /// (`None`: never launched), for [`Device::kernel_stats`]; `sm_threads` is the device's
    /// most resident threads per multiprocessor, when known.
    fn function_stats(
        &self,
        func: &CudaFunction,
        block: Option<u32>,
        dynamic_shared: u32,
        sm_threads: Option<u32>,
    ) -> Vec<(String, String)> {
        use sys::CUfunction_attribute as F;
        let text = |r: std::result::Result<i32, DriverError>| match r {
            Ok(v) => v.to_string(),
            Err(e) => format!("error: {e:?}"),
        };
        let mut stats: Vec<(String, String)> = [
            (
                "NUM_REGS (registers per thread)",
                F::CU_FUNC_ATTRIBUTE_NUM_REGS,
            ),
            (
                "SHARED_SIZE_BYTES (static shared memory per block)",
                F::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
            ),
            (
                "LOCAL_SIZE_BYTES (local memory per thread: spills, stack)",
                F::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES,
            ),
            (
                "MAX_THREADS_PER_BLOCK",
                F::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
            ),
        ]
        .into_iter()
        .map(|(name, attr)| (name.to_string(), text(func.get_attribute(attr))))
        .collect();
        if dynamic_shared > 0 {
            stats.push((
                "dynamic shared memory per block".to_string(),
                dynamic_shared.to_string(),
            ));
        }
        let Some(block) = block else {
            return stats;
        };
        // The occupancy query does not make the context current itself.
        let blocks = self.ctx.bind_to_thread().and_then(|()| {
            func.occupancy_max_active_blocks_per_multiprocessor(
                block,
                dynamic_shared as usize,
                None,
            )
        });
        match blocks {
            Ok(n) => {
                stats.push(("max active blocks per SM".to_string(), n.to_string()));
                if let Some(max) = sm_threads.filter(|&t| t > 0) {
                    let threads = n.saturating_mul(block);
                    stats.push((
                        "occupancy (resident threads of the SM's maximum)".to_string(),
                        format!(
                            "{:.0}% ({threads} of {max})",
                            100.0 * f64::from(threads) / f64::from(max)
                        ),
                    ));
                }
            }
            Err(e) => stats.push((
                "max active blocks per SM".to_string(),
                format!("error: {e:?}"),
            )),
        }
        stats
    }

    /// Compiles `k` with NVRTC and loads it into the context.
    fn build(&self, k: &Kernel<'_>) -> Result<Loaded> {
        let ptx = compile(k, self.arch)?;
        let declared = entry_param_count(&ptx.to_src(), k.name);
        let module = self.ctx.load_module(ptx).map_err(|e| Error::Cuda {
            call: "cuModuleLoadData",
            reason: if e.0 == sys::CUresult::CUDA_ERROR_UNSUPPORTED_PTX_VERSION {
                format!(
                    "{e:?}: the NVRTC library is newer than the driver (CUDA {}.{}); upgrade \
                     the NVIDIA driver or use an NVRTC no newer than it",
                    self.driver_version / 1000,
                    self.driver_version % 1000 / 10
                )
            } else {
                format!("{e:?}")
            },
        })?;
        let func = module
            .load_function(k.name)
            .map_err(cuda_err("cuModuleGetFunction"))?;
        let dynamic = k.dynamic_shared_bytes();
        if dynamic > 0 {
            // Past 48 KiB a kernel's dynamic shared memory is opted into, kernel by kernel.
            let bytes = i32::try_from(dynamic).map_err(|_| {
                Error::invalid(
                    "kernel.consts",
                    format!("{}={dynamic}", crate::device::DYNAMIC_SHARED_CONST),
                    "at most the device's max_shared_memory_bytes",
                )
            })?;
            self.ctx
                .bind_to_thread()
                .and_then(|()| {
                    func.set_attribute(
                        sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                        bytes,
                    )
                })
                .map_err(cuda_err("cuFuncSetAttribute"))?;
        }
        let params = declared.and_then(|count| self.param_sizes(&func, count));
        Ok(Loaded { func, params })
    }

    /// Sizes of the kernel's `count` declared parameters (counted in its PTX, so no query asks
    /// past the last one), or `None` where the driver cannot say (before 12.4, or on any error).
    fn param_sizes(&self, func: &CudaFunction, count: usize) -> Option<Vec<usize>> {
        if self.driver_version < DRIVER_WITH_PARAM_INFO || count > MAX_KERNEL_PARAMS {
            return None;
        }
        self.ctx.bind_to_thread().ok()?;
        let mut sizes = Vec::new();
        for index in 0..count {
            let (mut offset, mut size) = (0usize, 0usize);
            // SAFETY: the function handle is valid while `func` (which holds its module) lives;
            // the out-pointers point at live locals; this device's context is current.
            let r = unsafe {
                sys::cuFuncGetParamInfo(func.cu_function(), index, &mut offset, &mut size)
            };
            if r != sys::CUresult::CUDA_SUCCESS {
                return None;
            }
            sizes.push(size);
        }
        Some(sizes)
    }

    /// [`Device::kernel_stats`]: the driver's attributes and the occupancy of every
    /// kernel variant and block size launched.
    pub(super) fn kernel_statistics(&self) -> Vec<KernelStats> {
        let sm_threads = attribute(
            self.ctx.cu_device(),
            sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR,
        )
        .ok()
        .and_then(|t| u32::try_from(t).ok());
        // One entry per kernel and block size launched (a kernel loaded but never launched
        // gets one without a block size); queried outside the lock, so launches go on.
        let mut entries: Vec<(KernelKey, Option<u32>, CudaFunction)> = Vec::new();
        for (key, cached) in lock(&self.kernels).iter() {
            let func = &cached.loaded.func;
            if cached.blocks.is_empty() {
                entries.push((key.clone(), None, func.clone()));
            }
            for &block in &cached.blocks {
                entries.push((key.clone(), Some(block), func.clone()));
            }
        }
        entries.sort_by(|(a, ab, _), (b, bb, _)| {
            (a.name, a.elem.name(), ab, &a.consts).cmp(&(b.name, b.elem.name(), bb, &b.consts))
        });
        entries
            .into_iter()
            .map(|(key, block, func)| {
                let dynamic = Kernel {
                    name: key.name,
                    elem: key.elem,
                    consts: &key.consts,
                }
                .dynamic_shared_bytes();
                KernelStats {
                    stats: self.function_stats(&func, block, dynamic, sm_threads),
                    kernel: kernel_label(key.name, key.elem.name(), block, key.consts),
                    executable: String::new(),
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cuda::probe::pick_arch;
    use crate::kernels::{KernelDef, On, KERNELS};
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Mutex;

    #[test]
    fn every_source_is_found() {
        for (name, text) in SOURCES {
            assert_eq!(source(name), Some(*text));
            assert!(
                text.contains(&format!("void {name}(")),
                "{name}.cu defines {name}"
            );
        }
        assert_eq!(source("no_such_kernel"), None);
    }

    #[test]
    fn identifiers() {
        assert!(is_identifier("OP"));
        assert!(is_identifier("_SEGM2"));
        assert!(!is_identifier(""));
        assert!(!is_identifier("2X"));
        assert!(!is_identifier("A=B"));
        assert!(!is_identifier("A B"));
    }

    #[test]
    fn entry_parameters_are_counted_from_ptx() {
        let ptx = ".visible .entry shfl(\n\t.param .u64 .ptr .align 1 shfl_param_0,\n\t\
                   .param .u64 shfl_param_1,\n\t.param .align 16 .b8 shfl_param_2[128]\n)\n{";
        assert_eq!(entry_param_count(ptx, "shfl"), Some(3));
        assert_eq!(entry_param_count(ptx, "vote"), None);
        assert_eq!(entry_param_count(".entry none(\n)\n{", "none"), Some(0));
    }

    /// The architecture NVRTC compiles for on a 9.0 device, or `None` (said on stderr) where
    /// NVRTC is not installed: the compile tests then have nothing to check.
    fn nvrtc_arch_for_tests() -> Option<u32> {
        // SAFETY: only tries to load NVRTC under its usual names, as `available` does.
        if !unsafe { nvrtc::sys::is_culib_present() } {
            eprintln!("NVRTC not found: skipping");
            return None;
        }
        Some(pick_arch(90))
    }

    /// The element types the CUDA twin of table kernel `k` is compiled for: those its variants
    /// name, or whose width a bit-container variant names.
    fn elems_of(k: &KernelDef) -> Vec<ElemKind> {
        ElemKind::ALL
            .into_iter()
            .filter(|e| k.variants.contains(&e.name()) || k.variants.contains(&e.bits_name()))
            .collect()
    }

    /// The size in bytes of the last parameter of PTX entry `name` when it is passed by value
    /// (`.param .align 4 .b8 NAME_param_2[12]`), else `None`.
    fn by_value_param_bytes(ptx: &str, name: &str) -> Option<usize> {
        let start = ptx.find(&format!(".entry {name}("))?;
        let list = &ptx[start..start + ptx[start..].find(')')?];
        let last = list.lines().rfind(|l| l.contains(".param"))?;
        if !last.contains(".b8") {
            return None;
        }
        let size = last.rsplit('[').next()?.split(']').next()?;
        size.parse().ok()
    }

    /// The sort's digit passes in dynamic shared memory (CUDA's 32-bit pairs from
    /// `PAIRS_BLOCK_FROM` keys), whose byte counts the table does not list: every 32-bit key
    /// type in both orders, as the sort plans them on devices of compute capability 9.0 (384 ×
    /// 24) and 8.0 (384 × 23), compiles, its shared memory within the bytes the launch gives
    /// (the kernel's static assertion).
    #[test]
    fn the_sorts_variants_in_dynamic_shared_memory_compile_with_nvrtc() {
        use crate::sort::{onesweep_consts, TilePlan, Tuning, PAIRS_BLOCK_FROM};
        let Some(arch) = nvrtc_arch_for_tests() else {
            return;
        };
        let tuning = Tuning::default();
        let mut failures = Vec::new();
        for (opt_in, unit) in [(232_448, 233_472), (166_912, 167_936)] {
            let mut info = crate::sort::tests::info(32, 32, 32, true, 49152);
            info.backend = crate::device::BackendKind::Cuda;
            info.max_shared_memory_bytes = opt_in;
            info.unit_shared_memory_bytes = unit;
            let plan = TilePlan::for_len(&info, &tuning, 4, 4, PAIRS_BLOCK_FROM).unwrap();
            assert!(plan.dynamic_shared, "{plan:?}");
            for elem in [ElemKind::U32, ElemKind::I32, ElemKind::F32] {
                for descending in [0, 1] {
                    let order = 2 * crate::sort::key_kind(elem) + descending;
                    let consts =
                        onesweep_consts(&plan, (4, 1), order, &tuning, info.backend, false);
                    let variant = Kernel {
                        name: "sort_onesweep",
                        elem,
                        consts: &consts,
                    };
                    if let Err(e) = compile(&variant, arch) {
                        failures.push(format!("{variant}: {e}"));
                    }
                }
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    /// Every combination of the values the table lists for `k`'s CUDA constants.
    fn const_sets(k: &KernelDef) -> Vec<Vec<(&'static str, u32)>> {
        let mut sets = vec![Vec::new()];
        for c in k.consts.iter().filter(|c| c.on != On::Vulkan) {
            sets = sets
                .into_iter()
                .flat_map(|set| {
                    c.values.iter().map(move |&v| {
                        let mut set = set.clone();
                        set.push((c.name, v));
                        set
                    })
                })
                .collect();
        }
        sets
    }

    /// Compiles every kernel of `crate::kernels::KERNELS` that has a CUDA twin, for every
    /// element type its variants cover, with every combination of the values the table lists
    /// for its CUDA constants (on all cores: there are hundreds). Each entry point must take
    /// the table's parameter block, byte for byte. Needs NVRTC, no GPU. `XWARP_NVRTC_KERNELS`
    /// (kernel names, comma-separated) compiles only those kernels' variants.
    #[test]
    fn every_kernel_of_the_table_compiles_with_nvrtc() {
        let Some(arch) = nvrtc_arch_for_tests() else {
            return;
        };
        let only: Option<Vec<String>> = std::env::var("XWARP_NVRTC_KERNELS")
            .ok()
            .map(|v| v.split(',').map(|s| s.trim().to_string()).collect());
        let listed = |name: &str| only.as_ref().is_none_or(|l| l.iter().any(|n| n == name));
        let mut jobs = Vec::new();
        for k in KERNELS.iter().filter(|k| k.cuda && listed(k.name)) {
            let elems = elems_of(k);
            assert!(!elems.is_empty(), "{}: no element type", k.name);
            for elem in elems {
                for set in const_sets(k) {
                    jobs.push((k, elem, set));
                }
            }
        }
        let next = AtomicU64::new(0);
        let failures = Mutex::new(Vec::new());
        let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
        std::thread::scope(|scope| {
            for _ in 0..threads {
                scope.spawn(|| loop {
                    let i = next.fetch_add(1, Ordering::Relaxed) as usize;
                    let Some((k, elem, set)) = jobs.get(i) else {
                        break;
                    };
                    let variant = Kernel {
                        name: k.name,
                        elem: *elem,
                        consts: set,
                    };
                    let failure = match compile(&variant, arch) {
                        Err(e) => Some(format!("{variant}: {e}")),
                        Ok(ptx) => {
                            let ptx = ptx.to_src();
                            let bytes = by_value_param_bytes(&ptx, k.name);
                            if entry_param_count(&ptx, k.name).is_none() {
                                Some(format!("{variant}: no `.entry {}` in the PTX", k.name))
                            } else if bytes != k.params.map(|p| p.bytes()) {
                                Some(format!(
                                    "{variant}: the parameter struct is {bytes:?} bytes, the \
                                     table's {:?}",
                                    k.params.map(|p| (p.name, p.bytes()))
                                ))
                            } else {
                                None
                            }
                        }
                    };
                    failures.lock().unwrap().extend(failure);
                });
            }
        });
        let failures = failures.into_inner().unwrap();
        assert!(failures.is_empty(), "{}", failures.join("\n"));
        assert!(
            only.is_some() || jobs.len() >= 700,
            "only {} variants",
            jobs.len()
        );
        assert!(
            !jobs.is_empty(),
            "XWARP_NVRTC_KERNELS names no kernel of the table"
        );
    }

    /// A compile error names the kernel with its constants and the source file; a kernel with
    /// no source is a typed error.
    #[test]
    fn compile_errors_name_the_kernel_and_file() {
        let Some(arch) = nvrtc_arch_for_tests() else {
            return;
        };
        assert!(
            (75..=90).contains(&arch),
            "NVRTC offers compute_{arch} for a 9.0 device"
        );
        assert!(pick_arch(10_000) >= arch);
        let bad = [("OP", 9), ("SEGM", 1), ("ROWS", 4)];
        let k = Kernel {
            name: "shfl",
            elem: ElemKind::F32,
            consts: &bad,
        };
        match compile(&k, arch) {
            Err(Error::Compile { kernel, log }) => {
                assert_eq!(kernel, "shfl<f32,OP=9,SEGM=1,ROWS=4>");
                assert!(log.contains("unknown OP"), "{log}");
                assert!(log.contains("shfl.cu"), "{log}");
            }
            other => panic!("expected a compile error, got {:?}", other.map(|_| ())),
        }
        let k = Kernel {
            name: "nope",
            elem: ElemKind::F32,
            consts: &[],
        };
        assert!(matches!(
            compile(&k, arch),
            Err(Error::MissingKernel { .. })
        ));
    }

    #[test]
    fn ptx_by_value_parameters_are_measured() {
        let ptx = ".visible .entry shfl(\n\t.param .u64 .ptr .align 1 shfl_param_0,\n\t\
                   .param .u64 shfl_param_1,\n\t.param .align 4 .b8 shfl_param_2[16]\n)\n{";
        assert_eq!(by_value_param_bytes(ptx, "shfl"), Some(16));
        assert_eq!(by_value_param_bytes(ptx, "vote"), None);
        let pointers = ".entry f(\n\t.param .u64 f_param_0\n)\n{";
        assert_eq!(by_value_param_bytes(pointers, "f"), None);
    }
}
