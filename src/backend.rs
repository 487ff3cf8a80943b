//! Choosing and opening a backend: `auto` (CUDA on an NVIDIA GPU with libcuda, else the best
//! Vulkan device), or one forced by the API, the CLI's `--backend`, or `XWARP_BACKEND`.

pub use crate::device::DeviceSelector;
use crate::device::{BackendKind, Device, DeviceInfo};
use crate::error::{Error, Result};
use crate::vulkan::{VulkanDevice, VulkanOptions};
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
        BackendChoice::Auto if crate::cuda::available().is_ok() => BackendChoice::Cuda,
        BackendChoice::Auto => BackendChoice::Vulkan,
        other => other,
    };
    Ok(match backend {
        BackendChoice::Cuda => Arc::new(crate::cuda::CudaDevice::new(cuda_ordinal(
            opts.device.as_ref(),
        )?)?),
        _ => Arc::new(VulkanDevice::new(&VulkanOptions {
            device: opts.device.clone(),
            validation: opts.validation,
        })?),
    })
}

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
    vec![
        (BackendKind::Vulkan, crate::vulkan::list_devices()),
        (BackendKind::Cuda, crate::cuda::list_devices()),
    ]
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
