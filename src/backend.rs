//! Choosing and opening a backend: `auto` (CUDA on an NVIDIA GPU with libcuda, else the best
//! Vulkan device), or one forced by the API, the CLI's `--backend`, or `XWARP_BACKEND`.

pub use crate::device::DeviceSelector;
use crate::device::{BackendKind, Device, DeviceInfo};
use crate::error::{Error, Result};
use std::str::FromStr;
use std::sync::Arc;

/// Environment variable that forces a backend: `cuda`, `vulkan` or `auto`.
pub const BACKEND_ENV: &str = "XWARP_BACKEND";

/// Which backend to open.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum BackendChoice {
    /// CUDA when an NVIDIA GPU and libcuda are present, else the best Vulkan device.
    #[default]
    Auto,
    /// The Vulkan backend.
    Vulkan,
    /// The CUDA backend.
    Cuda,
}

impl BackendChoice {
    /// The choice `XWARP_BACKEND` makes, [`BackendChoice::Auto`] when unset.
    pub fn from_env() -> Result<Self> {
        match std::env::var(BACKEND_ENV) {
            Ok(v) if !v.is_empty() => v
                .parse()
                .map_err(|_| Error::invalid(BACKEND_ENV, v, "one of: auto, vulkan, cuda")),
            _ => Ok(BackendChoice::Auto),
        }
    }
}

impl FromStr for BackendChoice {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s.to_ascii_lowercase().as_str() {
            "auto" => Ok(BackendChoice::Auto),
            "vulkan" | "vk" => Ok(BackendChoice::Vulkan),
            "cuda" => Ok(BackendChoice::Cuda),
            _ => Err(Error::invalid("backend", s, "one of: auto, vulkan, cuda")),
        }
    }
}

/// How to open a device.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Which backend.
    pub backend: BackendChoice,
    /// Which device of it; `None` picks the best.
    pub device: Option<DeviceSelector>,
    /// Vulkan only: enable the validation layer when installed.
    pub validation: bool,
}

/// Opens the device `opts` asks for.
pub fn open(opts: &Options) -> Result<Arc<dyn Device>> {
    let backend = match opts.backend {
        BackendChoice::Auto if cuda_available() => BackendChoice::Cuda,
        BackendChoice::Auto => BackendChoice::Vulkan,
        other => other,
    };
    match backend {
        BackendChoice::Cuda => open_cuda(opts),
        _ => open_vulkan(opts),
    }
}

/// Whether the CUDA backend is built in and finds a device.
fn cuda_available() -> bool {
    #[cfg(feature = "cuda")]
    return crate::cuda::available().is_ok();
    #[cfg(not(feature = "cuda"))]
    false
}

/// [`Error::BackendUnavailable`] for a backend this build of xwarp leaves out.
#[allow(dead_code)]
fn not_built(backend: BackendKind, feature: &str) -> Error {
    Error::BackendUnavailable {
        backend,
        reason: format!(
            "this build of xwarp leaves it out: enable the Cargo feature `{feature}` (on by \
             default)"
        ),
    }
}

#[cfg(feature = "cuda")]
fn open_cuda(opts: &Options) -> Result<Arc<dyn Device>> {
    let ordinal = cuda_ordinal(opts.device.as_ref())?;
    Ok(Arc::new(crate::cuda::CudaDevice::new(ordinal)?))
}

#[cfg(not(feature = "cuda"))]
fn open_cuda(_: &Options) -> Result<Arc<dyn Device>> {
    Err(not_built(BackendKind::Cuda, "cuda"))
}

#[cfg(feature = "vulkan")]
fn open_vulkan(opts: &Options) -> Result<Arc<dyn Device>> {
    Ok(Arc::new(crate::vulkan::VulkanDevice::new(
        &crate::vulkan::VulkanOptions {
            device: opts.device.clone(),
            validation: opts.validation,
            ..Default::default()
        },
    )?))
}

#[cfg(not(feature = "vulkan"))]
fn open_vulkan(_: &Options) -> Result<Arc<dyn Device>> {
    Err(not_built(BackendKind::Vulkan, "vulkan"))
}

#[cfg(feature = "cuda")]
fn cuda_ordinal(selector: Option<&DeviceSelector>) -> Result<usize> {
    let Some(sel) = selector else { return Ok(0) };
    let devices = crate::cuda::list_devices()?;
    devices
        .iter()
        .find(|d| sel.matches(d.index, &d.name))
        .map(|d| d.index)
        .ok_or_else(|| Error::NoSuchDevice {
            backend: BackendKind::Cuda,
            selector: sel.to_string(),
            available: devices
                .iter()
                .map(|d| format!("{}: {}", d.index, d.name))
                .collect::<Vec<_>>()
                .join(", "),
        })
}

/// Opens the device `XWARP_BACKEND` asks for (`auto` when unset).
pub fn open_default() -> Result<Arc<dyn Device>> {
    open(&Options {
        backend: BackendChoice::from_env()?,
        ..Options::default()
    })
}

/// Every device of every backend, or for each backend why it is unavailable.
pub fn list_all() -> Vec<(BackendKind, Result<Vec<DeviceInfo>>)> {
    #[cfg(feature = "vulkan")]
    let vulkan = crate::vulkan::list_devices();
    #[cfg(not(feature = "vulkan"))]
    let vulkan = Err(not_built(BackendKind::Vulkan, "vulkan"));
    #[cfg(feature = "cuda")]
    let cuda = crate::cuda::list_devices();
    #[cfg(not(feature = "cuda"))]
    let cuda = Err(not_built(BackendKind::Cuda, "cuda"));
    vec![(BackendKind::Vulkan, vulkan), (BackendKind::Cuda, cuda)]
}

/// Opens one device per available backend (the best of each): what `validate` and the tests
/// compare against each other. Backends that are unavailable come back as errors.
pub fn open_each(validation: bool) -> Vec<(BackendKind, Result<Arc<dyn Device>>)> {
    [BackendChoice::Vulkan, BackendChoice::Cuda]
        .into_iter()
        .map(|b| {
            let kind = if b == BackendChoice::Cuda {
                BackendKind::Cuda
            } else {
                BackendKind::Vulkan
            };
            (
                kind,
                open(&Options {
                    backend: b,
                    device: None,
                    validation,
                }),
            )
        })
        .collect()
}
