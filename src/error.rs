//! The one error type of the crate.
//!
//! Every failure the caller can cause or meet is a variant here: bad parameters name the
//! parameter and its allowed range, missing drivers name what is missing and how to get it.

use crate::backend_kind::BackendKind;

/// Result alias used throughout xwarp.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in xwarp.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A parameter is outside the range the operation defines.
    #[error("invalid parameter `{name}` = {value}: allowed {allowed}")]
    InvalidParameter {
        /// The parameter's name as the API spells it.
        name: &'static str,
        /// The value that was passed.
        value: String,
        /// The allowed range or set.
        allowed: String,
    },
    /// Two buffers that must agree in length do not.
    #[error("length mismatch: `{name}` has {actual} elements, {expected} required")]
    LengthMismatch {
        /// The buffer whose length is wrong.
        name: &'static str,
        /// The length it must have.
        expected: u64,
        /// The length it has.
        actual: u64,
    },
    /// An operation that needs at least one element got none.
    #[error("empty input: `{name}` has no elements (allowed: 1 or more)")]
    EmptyInput {
        /// The empty buffer's name.
        name: &'static str,
    },
    /// A byte range lies outside its buffer.
    #[error("out of bounds: bytes {offset}..{end} of a {size}-byte buffer")]
    OutOfBounds {
        /// First byte of the range.
        offset: u64,
        /// One past the last byte of the range.
        end: u64,
        /// Size of the buffer in bytes.
        size: u64,
    },
    /// A buffer was created by another backend or device than the one it is used with.
    #[error("buffer belongs to another device ({buffer}), not to {device}")]
    ForeignBuffer {
        /// Device that owns the buffer.
        buffer: String,
        /// Device it was used with.
        device: String,
    },
    /// The backend cannot be used on this machine.
    #[error("{backend} backend unavailable: {reason}")]
    BackendUnavailable {
        /// Which backend.
        backend: BackendKind,
        /// What is missing and how to get it.
        reason: String,
    },
    /// No device of the backend matches the caller's selection.
    #[error("no {backend} device matches `{selector}`; available: {available}")]
    NoSuchDevice {
        /// Which backend.
        backend: BackendKind,
        /// What the caller asked for.
        selector: String,
        /// The devices that exist.
        available: String,
    },
    /// The device lacks a capability the operation needs.
    #[error("device `{device}` lacks {missing}")]
    MissingFeature {
        /// The device's name.
        device: String,
        /// The missing feature, named.
        missing: String,
    },
    /// A device does not run its subgroups the way its driver claims (the self-test at open
    /// measured otherwise): xwarp refuses it rather than give wrong answers.
    #[error(
        "`{device}` ({driver}) refused: its driver claims {claimed}, but the self-test at open \
         measured {measured}; no xwarp kernel can run correctly on it"
    )]
    SelfTestFailed {
        /// The device's name.
        device: String,
        /// Driver and API version, in words.
        driver: String,
        /// What the driver claims.
        claimed: String,
        /// What the self-test measured.
        measured: String,
    },
    /// The application's Vulkan device was created without a feature or extension xwarp needs
    /// on it (the device supports it; the application did not enable it).
    #[error("`{device}` was created without {feature}, which xwarp needs: {how}")]
    NotEnabled {
        /// The device's name.
        device: String,
        /// The feature or extension, as the Vulkan specification names it.
        feature: String,
        /// What to enable at device creation.
        how: String,
    },
    /// An application's buffer was created without a usage an operation needs.
    #[error("the application's buffer lacks usage {usage}, needed to {operation}")]
    MissingUsage {
        /// The missing usage flag, as Vulkan names it.
        usage: &'static str,
        /// What xwarp was about to do with the buffer.
        operation: &'static str,
    },
    /// A call that a recorded sequence cannot hold ([`crate::Device::record`]), or a
    /// recording used where it does not belong.
    #[error("`{call}` on `{device}`: {reason}")]
    Recording {
        /// The call, e.g. `Device::read`.
        call: &'static str,
        /// The device's name.
        device: String,
        /// Why, and what to do instead.
        reason: String,
    },
    /// A device memory allocation failed.
    #[error("allocation of {bytes} bytes failed on `{device}`: {reason}")]
    OutOfMemory {
        /// Bytes requested.
        bytes: u64,
        /// The device's name.
        device: String,
        /// The driver's words.
        reason: String,
    },
    /// A Vulkan call failed.
    #[cfg(feature = "vulkan")]
    #[error("Vulkan call `{call}` failed: {result}")]
    Vulkan {
        /// The Vulkan function that failed.
        call: &'static str,
        /// Its result code.
        result: ash::vk::Result,
    },
    /// A wgpu call xwarp made on an application's wgpu device failed (`vulkan::wgpu`).
    #[cfg(feature = "wgpu")]
    #[error("wgpu call `{call}` failed: {reason}")]
    Wgpu {
        /// The wgpu call, as wgpu names it.
        call: &'static str,
        /// wgpu's words.
        reason: String,
    },
    /// A CUDA driver call failed.
    #[error("CUDA call `{call}` failed: {reason}")]
    Cuda {
        /// What was being done.
        call: &'static str,
        /// The driver's words.
        reason: String,
    },
    /// NVRTC could not compile a kernel.
    #[error("NVRTC failed to compile `{kernel}`: {log}")]
    Compile {
        /// The kernel and its variant.
        kernel: String,
        /// The compiler's log.
        log: String,
    },
    /// The library has no build of the kernel asked for.
    #[error("kernel `{kernel}` has no build for {variant}")]
    MissingKernel {
        /// Kernel name.
        kernel: String,
        /// The variant that was asked for.
        variant: String,
    },
    /// A device's result differs from the CPU reference (benchmarks check before timing).
    #[error("`{case}` differs from the CPU reference: {detail}")]
    WrongResult {
        /// The case, in words.
        case: String,
        /// Where it first differs.
        detail: String,
    },
}

impl Error {
    /// Shorthand for [`Error::InvalidParameter`].
    pub fn invalid(name: &'static str, value: impl ToString, allowed: impl ToString) -> Self {
        Error::InvalidParameter {
            name,
            value: value.to_string(),
            allowed: allowed.to_string(),
        }
    }

    #[cfg(feature = "vulkan")]
    pub(crate) fn vk(call: &'static str) -> impl FnOnce(ash::vk::Result) -> Self {
        move |result| Error::Vulkan { call, result }
    }
}
