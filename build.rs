//! Compiles every `shaders/*.comp` to SPIR-V, once per variant its header names, and writes a
//! table of them (`$OUT_DIR/shaders.rs`) that the Vulkan backend includes. Any compile error
//! fails the build with the compiler's message: there is no half-built table.
//!
//! It also embeds every `cuda/*.cu` and `cuda/*.cuh` (`$OUT_DIR/cuda_sources.rs`) for the CUDA
//! backend.
//!
//! A shader names its variants on a line `// variants: b32 b64` (element types or bit
//! containers); each variant is compiled with `-DXW_TYPE_<VARIANT>` (upper case).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The package root, read when the script runs (not when it was compiled: one compiled build
/// script may serve checkouts at several paths that share a target directory).
fn manifest_dir() -> PathBuf {
    PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"))
}

fn main() {
    let dir = manifest_dir().join("shaders");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    println!("cargo:rerun-if-changed={}", dir.display());

    let compiler = shaderc::Compiler::new().expect("shaderc compiler");
    let mut table = String::from(
        "/// SPIR-V of every shader variant built from `shaders/`: (name, variant, words).\n\
         static SHADERS: &[(&str, &str, &[u8])] = &[\n",
    );
    let mut entries: Vec<_> = std::fs::read_dir(&dir)
        .expect("shaders/ exists")
        .map(|e| e.expect("readable shaders/").path())
        .collect();
    entries.sort();
    for path in entries {
        println!("cargo:rerun-if-changed={}", path.display());
        if path.extension().and_then(|e| e.to_str()) != Some("comp") {
            continue;
        }
        let name = path.file_stem().unwrap().to_str().unwrap().to_string();
        let source = std::fs::read_to_string(&path).expect("readable shader");
        let variants: Vec<String> = source
            .lines()
            .find_map(|l| l.trim().strip_prefix("// variants:"))
            .unwrap_or_else(|| panic!("{}: no `// variants:` line", path.display()))
            .split_whitespace()
            .map(str::to_string)
            .collect();
        for variant in variants {
            let mut opts = shaderc::CompileOptions::new().expect("shaderc options");
            opts.set_target_env(
                shaderc::TargetEnv::Vulkan,
                shaderc::EnvVersion::Vulkan1_1 as u32,
            );
            opts.set_target_spirv(shaderc::SpirvVersion::V1_3);
            opts.set_optimization_level(shaderc::OptimizationLevel::Performance);
            opts.set_warnings_as_errors();
            opts.add_macro_definition(&format!("XW_TYPE_{}", variant.to_uppercase()), Some("1"));
            let include_dir = dir.clone();
            opts.set_include_callback(move |requested, _, _, _| {
                let p = include_dir.join(requested);
                let content =
                    std::fs::read_to_string(&p).map_err(|e| format!("{}: {e}", p.display()))?;
                Ok(shaderc::ResolvedInclude {
                    resolved_name: p.display().to_string(),
                    content,
                })
            });
            let artifact = compiler
                .compile_into_spirv(
                    &source,
                    shaderc::ShaderKind::Compute,
                    &path.display().to_string(),
                    "main",
                    Some(&opts),
                )
                .unwrap_or_else(|e| panic!("{} ({variant}): {e}", path.display()));
            let spv = out.join(format!("{name}_{variant}.spv"));
            std::fs::write(&spv, artifact.as_binary_u8()).expect("write SPIR-V");
            writeln!(
                table,
                "    ({name:?}, {variant:?}, include_bytes!({:?})),",
                spv.display().to_string()
            )
            .unwrap();
        }
    }
    table.push_str(
        "];\n\n\
         /// The SPIR-V of `name` built for `variant`.\n\
         fn find_shader(name: &str, variant: &str) -> Option<(&'static str, &'static [u8])> {\n\
         \x20   SHADERS.iter().find(|s| s.0 == name && s.1 == variant).map(|s| (s.1, s.2))\n\
         }\n",
    );
    std::fs::write(out.join("shaders.rs"), table).expect("write shader table");
    write_cuda_table(&out);
}

/// Writes `$OUT_DIR/cuda_sources.rs`: every `cuda/*.cu` embedded as (file stem, text), for
/// the CUDA backend to compile with NVRTC at run time.
fn write_cuda_table(out: &Path) {
    let dir = manifest_dir().join("cuda");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("cuda/ exists")
        .map(|e| e.expect("readable cuda/").path())
        .filter(|p| p.extension().and_then(|e| e.to_str()) == Some("cu"))
        .collect();
    files.sort();
    let mut table = String::from("const SOURCES: &[(&str, &str)] = &[\n");
    for path in files {
        println!("cargo:rerun-if-changed={}", path.display());
        let name = path.file_stem().unwrap().to_str().unwrap().to_string();
        writeln!(
            table,
            "    ({name:?}, include_str!({:?})),",
            path.display().to_string()
        )
        .unwrap();
    }
    table.push_str("];\n");
    // Headers that kernels `#include "NAME.cuh"`; common.cuh is prepended to every kernel.
    let mut headers: Vec<_> = std::fs::read_dir(&dir)
        .expect("cuda/ exists")
        .map(|e| e.expect("readable cuda/").path())
        .filter(|p| p.extension().and_then(|e| e.to_str()) == Some("cuh"))
        .filter(|p| p.file_name().and_then(|n| n.to_str()) != Some("common.cuh"))
        .collect();
    headers.sort();
    table.push_str("const HEADERS: &[(&str, &str)] = &[\n");
    for path in headers {
        println!("cargo:rerun-if-changed={}", path.display());
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        writeln!(
            table,
            "    ({name:?}, include_str!({:?})),",
            path.display().to_string()
        )
        .unwrap();
    }
    table.push_str("];\n");
    std::fs::write(out.join("cuda_sources.rs"), table).expect("write CUDA table");
}
