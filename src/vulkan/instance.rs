//! The Vulkan instance: the loader, the instance (xwarp's own, with the validation layer and
//! its messenger, or an application's), and the process-wide lock that serialises opening,
//! closing and allocating.

use super::VulkanDevice;
use crate::device::BackendKind;
use crate::error::{Error, Result};
use ash::vk;
use std::ffi::{c_void, CStr};
use std::sync::{Mutex, MutexGuard};

const VALIDATION_LAYER: &CStr = c"VK_LAYER_KHRONOS_validation";

/// Opening and closing instances and devices, enumerating them, and allocating and freeing
/// memory run one at a time in the process. NVIDIA's 580 driver was seen to deadlock (a thread
/// opening and closing devices spinning inside the driver, a thread working on another device
/// blocked on one of the driver's mutexes) when threads did these concurrently. They are rare
/// operations, so serialising them costs nothing that matters; submits and waits stay
/// concurrent.
static LIFECYCLE: Mutex<()> = Mutex::new(());

thread_local! {
    static LIFECYCLE_DEPTH: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// Holds [`LIFECYCLE`]; reentrant, so that error paths inside a held section may drop objects
/// whose destructors take it again.
pub(super) struct LifecycleGuard(#[allow(dead_code)] Option<MutexGuard<'static, ()>>);

impl Drop for LifecycleGuard {
    fn drop(&mut self) {
        LIFECYCLE_DEPTH.with(|d| d.set(d.get() - 1));
    }
}

pub(super) fn lifecycle() -> LifecycleGuard {
    let depth = LIFECYCLE_DEPTH.with(|d| {
        let v = d.get();
        d.set(v + 1);
        v
    });
    LifecycleGuard((depth == 0).then(|| lock(&LIFECYCLE)))
}

pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding one of these locks cannot leave Vulkan state half-changed in a way
    // later calls depend on, so a poisoned lock is used as it is.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

const NO_DRIVER: &str = "no Vulkan driver (ICD) found; install one (Debian: apt-get install \
                         mesa-vulkan-drivers for llvmpipe, or the GPU vendor's driver)";

pub(super) fn unavailable(reason: impl Into<String>) -> Error {
    Error::BackendUnavailable {
        backend: BackendKind::Vulkan,
        reason: reason.into(),
    }
}

/// Instance-level state shared by everything made from it; dropped last.
pub(super) struct Instance {
    pub(super) entry: ash::Entry,
    pub(super) instance: ash::Instance,
    pub(super) debug: Option<(ash::ext::debug_utils::Instance, vk::DebugUtilsMessengerEXT)>,
    /// Boxed so its address stays fixed: the messenger callback writes through it.
    pub(super) messages: Box<Mutex<Vec<String>>>,
    /// False for an application's instance, which xwarp never destroys.
    pub(super) owned: bool,
    /// Whether the layer runs synchronization validation too.
    pub(super) sync_validation: bool,
    /// What keeps an application's instance and device alive while xwarp uses them, where the
    /// application hands that to xwarp (a wgpu device: `vulkan::wgpu`); dropped after every
    /// object xwarp made on the device, as the last holder of the instance lets go.
    pub(super) _keep: Option<Box<dyn std::any::Any + Send + Sync>>,
}

impl Instance {
    pub(super) fn new(validation: bool) -> Result<Self> {
        let _guard = lifecycle();
        // SAFETY: loads the system's Vulkan loader; `entry` is stored beside every object made
        // through it and dropped after them.
        let entry = unsafe { ash::Entry::load() }.map_err(|e| {
            unavailable(format!(
                "the Vulkan loader (libvulkan.so.1) could not be loaded ({e}); install it \
                 (Debian: apt-get install libvulkan1) and a driver (mesa-vulkan-drivers for \
                 the CPU driver llvmpipe)"
            ))
        })?;
        // SAFETY: plain queries on a loaded entry.
        let version = unsafe { entry.try_enumerate_instance_version() }
            .map_err(Error::vk("vkEnumerateInstanceVersion"))?
            .unwrap_or(vk::API_VERSION_1_0);
        if version < vk::API_VERSION_1_1 {
            return Err(unavailable(format!(
                "the Vulkan loader offers API {}.{}, subgroup operations need 1.1",
                vk::api_version_major(version),
                vk::api_version_minor(version)
            )));
        }
        let api = version.min(vk::API_VERSION_1_3);
        // SAFETY: plain queries on a loaded entry.
        let (layers, exts) = unsafe {
            (
                entry
                    .enumerate_instance_layer_properties()
                    .unwrap_or_default(),
                entry
                    .enumerate_instance_extension_properties(None)
                    .unwrap_or_default(),
            )
        };
        let has_ext = |name: &CStr| exts.iter().any(|e| e.extension_name_as_c_str() == Ok(name));
        let validation = validation
            && layers
                .iter()
                .any(|l| l.layer_name_as_c_str() == Ok(VALIDATION_LAYER));
        let mut ext_names = Vec::new();
        let mut flags = vk::InstanceCreateFlags::empty();
        if has_ext(ash::khr::portability_enumeration::NAME) {
            ext_names.push(ash::khr::portability_enumeration::NAME.as_ptr());
            flags |= vk::InstanceCreateFlags::ENUMERATE_PORTABILITY_KHR;
        }
        let mut layer_names = Vec::new();
        let mut sync_validation = false;
        if validation {
            layer_names.push(VALIDATION_LAYER.as_ptr());
            ext_names.push(ash::ext::debug_utils::NAME.as_ptr());
            // SAFETY: plain query on a loaded entry.
            let layer_exts =
                unsafe { entry.enumerate_instance_extension_properties(Some(VALIDATION_LAYER)) }
                    .unwrap_or_default();
            sync_validation = layer_exts
                .iter()
                .any(|e| e.extension_name_as_c_str() == Ok(ash::ext::validation_features::NAME));
            if sync_validation {
                ext_names.push(ash::ext::validation_features::NAME.as_ptr());
            }
        }
        let app = vk::ApplicationInfo::default()
            .application_name(c"xwarp")
            .engine_name(c"xwarp")
            .api_version(api);
        let enables = [vk::ValidationFeatureEnableEXT::SYNCHRONIZATION_VALIDATION];
        let mut features =
            vk::ValidationFeaturesEXT::default().enabled_validation_features(&enables);
        let mut info = vk::InstanceCreateInfo::default()
            .application_info(&app)
            .enabled_layer_names(&layer_names)
            .enabled_extension_names(&ext_names)
            .flags(flags);
        if sync_validation {
            info = info.push_next(&mut features);
        }
        // SAFETY: `info` and everything it points to live until the call returns.
        let instance = unsafe { entry.create_instance(&info, None) }.map_err(|e| match e {
            // What the loader answers when it finds no driver at all.
            vk::Result::ERROR_INCOMPATIBLE_DRIVER => unavailable(format!("{NO_DRIVER} ({e})")),
            e => Error::vk("vkCreateInstance")(e),
        })?;
        let mut this = Instance {
            entry,
            instance,
            debug: None,
            messages: Box::new(Mutex::new(Vec::new())),
            owned: true,
            sync_validation,
            _keep: None,
        };
        if validation {
            let loader = ash::ext::debug_utils::Instance::new(&this.entry, &this.instance);
            let info = vk::DebugUtilsMessengerCreateInfoEXT::default()
                .message_severity(
                    vk::DebugUtilsMessageSeverityFlagsEXT::WARNING
                        | vk::DebugUtilsMessageSeverityFlagsEXT::ERROR,
                )
                .message_type(
                    vk::DebugUtilsMessageTypeFlagsEXT::GENERAL
                        | vk::DebugUtilsMessageTypeFlagsEXT::VALIDATION
                        | vk::DebugUtilsMessageTypeFlagsEXT::PERFORMANCE,
                )
                .pfn_user_callback(Some(on_validation_message))
                .user_data(&*this.messages as *const Mutex<Vec<String>> as *mut c_void);
            // SAFETY: the user data points into `this.messages`, a Box that lives until the
            // messenger is destroyed in `Drop`.
            let messenger = unsafe { loader.create_debug_utils_messenger(&info, None) };
            this.debug = Some((
                loader,
                messenger.map_err(Error::vk("vkCreateDebugUtilsMessengerEXT"))?,
            ));
        }
        Ok(this)
    }

    pub(super) fn physical_devices(&self) -> Result<Vec<vk::PhysicalDevice>> {
        let _guard = lifecycle();
        // SAFETY: the instance is alive.
        let devices = unsafe { self.instance.enumerate_physical_devices() }
            .map_err(Error::vk("vkEnumeratePhysicalDevices"))?;
        if devices.is_empty() {
            return Err(unavailable(NO_DRIVER));
        }
        Ok(devices)
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        if !self.owned {
            return;
        }
        let _guard = lifecycle();
        // SAFETY: every object made from the instance was destroyed before (they hold Arcs
        // to it); the messenger goes before the instance it belongs to.
        unsafe {
            if let Some((loader, messenger)) = self.debug.take() {
                loader.destroy_debug_utils_messenger(messenger, None);
            }
            self.instance.destroy_instance(None);
        }
    }
}

unsafe extern "system" fn on_validation_message(
    severity: vk::DebugUtilsMessageSeverityFlagsEXT,
    _kind: vk::DebugUtilsMessageTypeFlagsEXT,
    data: *const vk::DebugUtilsMessengerCallbackDataEXT<'_>,
    user: *mut c_void,
) -> vk::Bool32 {
    // SAFETY: the layer passes valid callback data for the duration of the call, and `user`
    // is the `Mutex<Vec<String>>` registered with the messenger, alive while it exists.
    unsafe {
        let text = if data.is_null() {
            "(no message)".to_string()
        } else {
            (*data)
                .message_as_c_str()
                .map(|m| m.to_string_lossy().into_owned())
                .unwrap_or_default()
        };
        let sink = &*(user as *const Mutex<Vec<String>>);
        lock(sink).push(format!("{severity:?}: {text}"));
    }
    vk::FALSE
}

impl VulkanDevice {
    /// Validation messages (warning and error severity) collected since the device was
    /// opened; empty when validation is off.
    pub fn validation_messages(&self) -> Vec<String> {
        lock(&self.core._instance.messages).clone()
    }

    /// Whether the validation layer is active on this device.
    pub fn validation_enabled(&self) -> bool {
        self.core._instance.debug.is_some()
    }

    /// Whether the validation layer checks synchronization too (through
    /// `VK_EXT_validation_features`).
    pub fn sync_validation_enabled(&self) -> bool {
        self.validation_enabled() && self.core._instance.sync_validation
    }
}
