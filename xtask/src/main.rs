//! Maintenance tasks of the xwarp repository, run as `cargo xtask TASK`.
//!
//! `cargo xtask shaders` compiles every kernel variant of `src/kernels/table.rs` from
//! `shaders/` to `spirv/NAME_VARIANT.spv` with shaderc and writes `spirv/MANIFEST`, the
//! fingerprints the library's build script checks. `cargo xtask shaders --check` writes
//! nothing and fails, listing them, when any file of `spirv/` differs from what it would
//! write (CI runs it, so the SPIR-V shipped is the SPIR-V the shaders compile to).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[allow(dead_code)]
#[path = "../../src/kernels/table.rs"]
mod table;

#[allow(dead_code)]
#[path = "../../src/kernels/source.rs"]
mod source;

const USAGE: &str = "usage: cargo xtask shaders [--check]";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let result = match args.as_slice() {
        ["shaders"] => shaders(false),
        ["shaders", "--check"] => shaders(true),
        _ => Err(USAGE.to_string()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The repository root (this crate lives in `xtask/` under it).
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask/ has a parent")
        .to_path_buf()
}

/// Compiles one variant with exactly the options of [`source::COMPILE_OPTIONS`]. Files are
/// named relative to the repository, so the SPIR-V does not depend on where it is checked out.
fn compile(
    compiler: &shaderc::Compiler,
    shaders: &Path,
    name: &str,
    variant: &str,
    text: &str,
) -> Result<Vec<u8>, String> {
    let mut opts = shaderc::CompileOptions::new().map_err(|e| format!("shaderc options: {e}"))?;
    opts.set_target_env(
        shaderc::TargetEnv::Vulkan,
        shaderc::EnvVersion::Vulkan1_1 as u32,
    );
    opts.set_target_spirv(shaderc::SpirvVersion::V1_3);
    opts.set_optimization_level(shaderc::OptimizationLevel::Performance);
    opts.set_warnings_as_errors();
    opts.add_macro_definition(&format!("XW_TYPE_{}", variant.to_uppercase()), Some("1"));
    let dir = shaders.to_path_buf();
    opts.set_include_callback(move |requested, _, _, _| {
        let p = dir.join(requested);
        let content = std::fs::read_to_string(&p).map_err(|e| format!("{}: {e}", p.display()))?;
        Ok(shaderc::ResolvedInclude {
            resolved_name: format!("shaders/{requested}"),
            content,
        })
    });
    let file = format!("shaders/{name}.comp");
    compiler
        .compile_into_spirv(
            text,
            shaderc::ShaderKind::Compute,
            &file,
            "main",
            Some(&opts),
        )
        .map(|artifact| artifact.as_binary_u8().to_vec())
        .map_err(|e| format!("{file} ({variant}): {e}"))
}

/// Everything `spirv/` should hold: (file name, bytes), the manifest last.
fn generate(root: &Path) -> Result<Vec<(String, Vec<u8>)>, String> {
    let shaders = root.join("shaders");
    let compiler = shaderc::Compiler::new().map_err(|e| format!("shaderc: {e}"))?;
    let mut files = Vec::new();
    let mut manifest = format!(
        "{}\n# options: {}\n",
        source::MANIFEST_HEADER,
        source::COMPILE_OPTIONS
    );
    for k in table::KERNELS {
        let sources = source::resolve(&shaders, &format!("{}.comp", k.name))?;
        for variant in k.variants {
            let spirv = compile(&compiler, &shaders, k.name, variant, &sources[0].1)?;
            let file = source::spirv_file(k.name, variant);
            let fingerprint = source::fingerprint(&sources, variant);
            manifest.push_str(&source::manifest_line(&file, fingerprint, &spirv));
            manifest.push('\n');
            files.push((file, spirv));
        }
    }
    files.push(("MANIFEST".to_string(), manifest.into_bytes()));
    Ok(files)
}

fn shaders(check: bool) -> Result<(), String> {
    let root = root();
    let dir = root.join("spirv");
    let want = generate(&root)?;
    let present: Vec<String> = match std::fs::read_dir(&dir) {
        Ok(entries) => entries
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .collect(),
        Err(_) => Vec::new(),
    };
    let extra: Vec<&String> = present
        .iter()
        .filter(|p| !want.iter().any(|(f, _)| f == *p))
        .collect();
    if check {
        let mut stale: Vec<String> = want
            .iter()
            .filter(|(file, bytes)| std::fs::read(dir.join(file)).ok().as_ref() != Some(bytes))
            .map(|(file, _)| format!("spirv/{file}"))
            .collect();
        // A changed comment leaves the SPIR-V as it was but not its fingerprint: name the
        // files whose manifest lines are out of date.
        let old = std::fs::read_to_string(dir.join("MANIFEST")).unwrap_or_default();
        let new = String::from_utf8_lossy(&want.last().expect("the manifest").1).into_owned();
        for line in new.lines().filter(|l| !l.starts_with('#')) {
            if !old.lines().any(|l| l == line) {
                let file = line.split(' ').next().unwrap_or(line);
                stale.push(format!("spirv/MANIFEST: the line of {file}"));
            }
        }
        stale.extend(
            extra
                .iter()
                .map(|f| format!("spirv/{f} (no kernel variant)")),
        );
        if stale.is_empty() {
            println!("spirv/: {} files, all up to date", want.len());
            return Ok(());
        }
        return Err(format!(
            "spirv/ differs from what `{}` writes:\n  {}",
            source::REGENERATE,
            stale.join("\n  ")
        ));
    }
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for f in extra {
        let path = dir.join(f);
        std::fs::remove_file(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    let mut written = 0;
    for (file, bytes) in &want {
        let path = dir.join(file);
        if std::fs::read(&path).ok().as_ref() != Some(bytes) {
            std::fs::write(&path, bytes).map_err(|e| format!("{}: {e}", path.display()))?;
            written += 1;
        }
    }
    println!("spirv/: {} files, {written} written", want.len());
    Ok(())
}
