//! Checks the kernel interface and embeds the kernels; compiles nothing but itself.
//!
//! 1. Every `shaders/*.comp` (with its includes) and every `cuda/*.cu` (with `common.cuh` and
//!    its includes) is checked against `src/kernels/table.rs`: specialization constants by
//!    name and backend, the workgroup size as constant 0, distinct constant ids, parameter
//!    fields in order. Any difference fails the build with one line per difference, naming
//!    the file, the kernel and the constant or field. `$OUT_DIR/spec_ids.rs` records each
//!    constant's id for the Vulkan backend.
//! 2. The SPIR-V of every kernel variant is prebuilt in `spirv/` (by `cargo xtask shaders`,
//!    so that building xwarp needs no shader compiler). `spirv/MANIFEST` keeps a fingerprint
//!    of each file's sources and compile options and of its bytes; when `shaders/` or
//!    `spirv/` no longer match it the build fails, naming the stale files and the command that
//!    regenerates them. `$OUT_DIR/shaders.rs` embeds the files for the Vulkan backend.
//! 3. Every `cuda/*.cu` and `cuda/*.cuh` is embedded (`$OUT_DIR/cuda_sources.rs`) for the
//!    CUDA backend, which compiles them with NVRTC at run time.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

#[allow(dead_code)]
#[path = "src/kernels/table.rs"]
mod table;

#[allow(dead_code)]
#[path = "src/kernels/source.rs"]
mod source;

/// The package root, read when the script runs (not when it was compiled: one compiled build
/// script may serve checkouts at several paths that share a target directory).
fn manifest_dir() -> PathBuf {
    PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"))
}

/// The file stems in `dir` with extension `ext`, sorted.
fn stems(dir: &Path, ext: &str) -> Vec<String> {
    let mut stems: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("readable directory").path())
        .filter(|p| p.extension().and_then(|e| e.to_str()) == Some(ext))
        .map(|p| p.file_stem().unwrap().to_str().unwrap().to_string())
        .collect();
    stems.sort();
    stems
}

fn main() {
    let root = manifest_dir();
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    for watched in [
        "shaders",
        "cuda",
        "spirv",
        "src/kernels/table.rs",
        "src/kernels/source.rs",
    ] {
        println!("cargo:rerun-if-changed={}", root.join(watched).display());
    }
    let shaders = root.join("shaders");
    let cuda = root.join("cuda");

    let mut errors = Vec::new();
    let comps: Vec<(String, String)> = stems(&shaders, "comp")
        .into_iter()
        .map(|stem| {
            let text = std::fs::read_to_string(shaders.join(format!("{stem}.comp")))
                .expect("readable shader");
            (stem, text)
        })
        .collect();
    let cus = stems(&cuda, "cu");
    errors.extend(source::check_table(&comps, &cus));

    let mut spec_ids = String::from(
        "/// (kernel, specialization constant, constant_id) as the shaders declare them.\n\
         static SPEC_IDS: &[(&str, &str, u32)] = &[\n",
    );
    let mut sources = Vec::new();
    for k in table::KERNELS {
        let files = match source::resolve(&shaders, &format!("{}.comp", k.name)) {
            Ok(files) => files,
            Err(e) => {
                errors.push(format!("kernel `{}`: {e}", k.name));
                continue;
            }
        };
        let iface = source::glsl_interface(&files);
        errors.extend(source::check_glsl(k, &iface));
        for (name, id, _) in &iface.constants {
            writeln!(spec_ids, "    ({:?}, {name:?}, {id}),", k.name).unwrap();
        }
        if k.cuda {
            let cuda_files = source::resolve(&cuda, "common.cuh").and_then(|mut common| {
                common.extend(source::resolve(&cuda, &format!("{}.cu", k.name))?);
                Ok(common)
            });
            match cuda_files {
                Ok(files) => errors.extend(source::check_cuda(
                    k,
                    &source::cuda_interface(k.name, &files),
                )),
                Err(e) => errors.push(format!("kernel `{}`: {e}", k.name)),
            }
        }
        sources.push((k, files));
    }
    spec_ids.push_str("];\n");
    if !errors.is_empty() {
        fail(
            "the kernel sources disagree with src/kernels/table.rs (the kernel interface)",
            &errors,
        );
    }
    std::fs::write(out.join("spec_ids.rs"), spec_ids).expect("write spec_ids.rs");

    write_shader_table(&root, &out, &sources);
    write_cuda_table(&out);
}

/// Prints `errors` under `what` and fails the build.
fn fail(what: &str, errors: &[String]) -> ! {
    eprintln!("error: {what}:");
    for e in errors {
        eprintln!("  {e}");
    }
    std::process::exit(1);
}

/// Checks `spirv/` against the sources and `spirv/MANIFEST`, then writes
/// `$OUT_DIR/shaders.rs`: every variant's SPIR-V embedded as (name, variant, bytes).
fn write_shader_table(
    root: &Path,
    out: &Path,
    sources: &[(&table::KernelDef, Vec<(String, String)>)],
) {
    let spirv = root.join("spirv");
    let manifest = std::fs::read_to_string(spirv.join("MANIFEST"))
        .map(|t| t.replace("\r\n", "\n"))
        .unwrap_or_default();
    let recorded: Vec<&str> = manifest.lines().filter(|l| !l.starts_with('#')).collect();
    let mut stale = Vec::new();
    let mut table = String::from(
        "/// SPIR-V of every shader variant, prebuilt in `spirv/` from `shaders/`: (name, \
         variant, bytes).\n\
         static SHADERS: &[(&str, &str, &[u8])] = &[\n",
    );
    for (k, files) in sources {
        // (why, variants) for this kernel's stale files.
        let mut why_stale: Vec<(&str, Vec<&str>)> = Vec::new();
        for variant in k.variants {
            let file = source::spirv_file(k.name, variant);
            let path = spirv.join(&file);
            let why = match std::fs::read(&path) {
                Err(_) => Some("missing"),
                Ok(bytes) => {
                    let line =
                        source::manifest_line(&file, source::fingerprint(files, variant), &bytes);
                    let entry = recorded.iter().find(|l| l.split(' ').next() == Some(&file));
                    match entry {
                        Some(&l) if l == line => None,
                        Some(l) if l.split(' ').nth(1) != line.split(' ').nth(1) => {
                            Some("the shader or an include changed since they were built")
                        }
                        Some(_) => Some("their bytes differ from spirv/MANIFEST's record"),
                        None => Some("not in spirv/MANIFEST"),
                    }
                }
            };
            match why {
                Some(why) => match why_stale.iter_mut().find(|w| w.0 == why) {
                    Some(w) => w.1.push(variant),
                    None => why_stale.push((why, vec![variant])),
                },
                None => writeln!(
                    table,
                    "    ({:?}, {variant:?}, include_bytes!({:?})),",
                    k.name,
                    path.display().to_string()
                )
                .unwrap(),
            }
        }
        for (why, variants) in why_stale {
            stale.push(format!(
                "shaders/{0}.comp (kernel `{0}`): spirv/{0}_{{{1}}}.spv: {why}",
                k.name,
                variants.join(",")
            ));
        }
    }
    if !stale.is_empty() {
        stale.push(format!(
            "regenerate them with `{}` (it builds shaderc, which needs cmake, ninja, python3 \
             and a C++ compiler) and commit spirv/",
            source::REGENERATE
        ));
        fail(
            "spirv/ is stale: the prebuilt SPIR-V does not match shaders/",
            &stale,
        );
    }
    table.push_str(
        "];\n\n\
         /// The SPIR-V of `name` built for `variant`.\n\
         fn find_shader(name: &str, variant: &str) -> Option<(&'static str, &'static [u8])> {\n\
         \x20   SHADERS.iter().find(|s| s.0 == name && s.1 == variant).map(|s| (s.1, s.2))\n\
         }\n",
    );
    std::fs::write(out.join("shaders.rs"), table).expect("write shader table");
}

/// Writes `$OUT_DIR/cuda_sources.rs`: every `cuda/*.cu` embedded as (file stem, text), for
/// the CUDA backend to compile with NVRTC at run time.
fn write_cuda_table(out: &Path) {
    let dir = manifest_dir().join("cuda");
    let mut table = String::from("const SOURCES: &[(&str, &str)] = &[\n");
    for name in stems(&dir, "cu") {
        let path = dir.join(format!("{name}.cu"));
        writeln!(
            table,
            "    ({name:?}, include_str!({:?})),",
            path.display().to_string()
        )
        .unwrap();
    }
    table.push_str("];\n");
    // Headers that kernels `#include "NAME.cuh"`; common.cuh is prepended to every kernel.
    table.push_str("const HEADERS: &[(&str, &str)] = &[\n");
    for stem in stems(&dir, "cuh") {
        if stem == "common" {
            continue;
        }
        let path = dir.join(format!("{stem}.cuh"));
        writeln!(
            table,
            "    (\"{stem}.cuh\", include_str!({:?})),",
            path.display().to_string()
        )
        .unwrap();
    }
    table.push_str("];\n");
    std::fs::write(out.join("cuda_sources.rs"), table).expect("write CUDA table");
}
