//! Kernel sources read as text, for `build.rs` and `xtask` (the library compiles this file only
//! for its tests): a source with its includes resolved, the interface it declares, the checks
//! of `table.rs` against it, and the fingerprint that `spirv/MANIFEST` keeps per SPIR-V file.
//!
//! The parsers know the few forms xwarp's sources use (`layout(constant_id = N) const uint
//! NAME = ...;`, a `layout(push_constant) uniform` block of `uint`/`int` fields, a CUDA entry
//! point taking its parameter struct by value); preprocessor conditionals are not evaluated,
//! so a declaration inside `#if` counts as declared.

use super::table::{
    KernelDef, On, ParamBlock, BIT_VARIANTS, ELEMENT_VARIANTS, INT64_BIT_VARIANTS, KERNELS,
    MEMORY_MODEL_VARIANTS, SUBNORMAL_VARIANTS,
};
use std::collections::BTreeSet;
use std::path::Path;

/// How xtask compiles every SPIR-V variant (with shaderc). Part of every fingerprint, so that
/// changing the options makes every file stale; xtask must apply exactly these.
pub const COMPILE_OPTIONS: &str = "target-env vulkan1.1; spirv 1.3; optimization performance; \
                                   warnings as errors; -DXW_TYPE_<VARIANT>=1";

/// The command that regenerates `spirv/`.
pub const REGENERATE: &str = "cargo xtask shaders";

/// The first line of `spirv/MANIFEST`.
pub const MANIFEST_HEADER: &str = "# spirv/MANIFEST, written by `cargo xtask shaders`: per SPIR-V \
                                   file, FNV-1a 64 of its sources and compile options, and of \
                                   its bytes.";

/// A file's text as the fingerprint and the parsers see it: `\r\n` read as `\n`, so that a
/// checkout that converts line endings fingerprints the same.
fn normalized(text: String) -> String {
    if text.contains('\r') {
        text.replace("\r\n", "\n")
    } else {
        text
    }
}

/// `file` (in `dir`) and every file it includes with `#include "NAME"` (from `dir`, the same
/// for GLSL and CUDA), each once, in order of first inclusion: (file name, text).
pub fn resolve(dir: &Path, file: &str) -> Result<Vec<(String, String)>, String> {
    let mut files = Vec::new();
    resolve_into(dir, file, &mut files, 0)?;
    Ok(files)
}

fn resolve_into(
    dir: &Path,
    file: &str,
    files: &mut Vec<(String, String)>,
    depth: u32,
) -> Result<(), String> {
    if files.iter().any(|(name, _)| name == file) {
        return Ok(());
    }
    if depth > 8 {
        return Err(format!("{file}: includes nest deeper than 8"));
    }
    let path = dir.join(file);
    let text = std::fs::read_to_string(&path)
        .map(normalized)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    files.push((file.to_string(), text.clone()));
    for line in text.lines() {
        if let Some(name) = include_of(line) {
            resolve_into(dir, name, files, depth + 1)?;
        }
    }
    Ok(())
}

/// The file a `#include "NAME"` line names.
pub fn include_of(line: &str) -> Option<&str> {
    line.trim()
        .strip_prefix("#include")?
        .trim()
        .strip_prefix('"')?
        .strip_suffix('"')
}

/// FNV-1a 64 of `bytes`, continuing from `hash` (start from [`FNV_OFFSET`]).
pub fn fnv1a64(mut hash: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

/// FNV-1a 64's starting value.
pub const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

/// The fingerprint of one SPIR-V variant's inputs: the compile options, the variant and every
/// source file (names and texts) that goes into it.
pub fn fingerprint(files: &[(String, String)], variant: &str) -> u64 {
    let mut h = fnv1a64(FNV_OFFSET, COMPILE_OPTIONS.as_bytes());
    h = fnv1a64(h, &[0]);
    h = fnv1a64(h, variant.as_bytes());
    for (name, text) in files {
        h = fnv1a64(h, &[0]);
        h = fnv1a64(h, name.as_bytes());
        h = fnv1a64(h, &[0]);
        h = fnv1a64(h, text.as_bytes());
    }
    h
}

/// The file `spirv/` holds for one variant of a kernel.
pub fn spirv_file(kernel: &str, variant: &str) -> String {
    format!("{kernel}_{variant}.spv")
}

/// One line of `spirv/MANIFEST`.
pub fn manifest_line(file: &str, sources: u64, spirv: &[u8]) -> String {
    format!("{file} {sources:016x} {:016x}", fnv1a64(FNV_OFFSET, spirv))
}

/// `text` with comments blanked (newlines kept, so offsets keep their line numbers), string
/// literals emptied and `#error` lines dropped: what is left is declarations and code.
pub fn strip(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i..].starts_with(b"/*") {
            i += 2;
            while i < b.len() && !b[i..].starts_with(b"*/") {
                if b[i] == b'\n' {
                    out.push('\n');
                }
                i += 1;
            }
            i = (i + 2).min(b.len());
        } else if b[i] == b'"' {
            out.push_str("\"\"");
            i += 1;
            while i < b.len() && b[i] != b'"' && b[i] != b'\n' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
        } else {
            let start = i;
            while i < b.len() && !matches!(b[i], b'/' | b'"') {
                i += 1;
            }
            if i == start {
                i += 1;
            }
            out.push_str(&text[start..i.min(b.len())]);
        }
    }
    out.lines()
        .map(|l| {
            if l.trim_start().starts_with("#error") {
                ""
            } else {
                l
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The identifiers of `text`, each with its byte offset.
fn identifiers(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let b = text.as_bytes();
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < b.len() {
            if b[i].is_ascii_alphabetic() || b[i] == b'_' {
                let start = i;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                    i += 1;
                }
                return Some((start, &text[start..i]));
            }
            if b[i].is_ascii_digit() {
                // A number's suffix (`16u`) is no identifier.
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                    i += 1;
                }
            } else {
                i += 1;
            }
        }
        None
    })
}

/// The 1-based line of byte `offset` in `text`.
fn line_of(text: &str, offset: usize) -> usize {
    1 + text[..offset].bytes().filter(|&c| c == b'\n').count()
}

/// The fields of a `{ ... }` declaration block (its inside), as table.rs writes them:
/// `name`, or `name[N]` for an array.
fn block_fields(inside: &str) -> Vec<String> {
    let mut fields = Vec::new();
    for decl in inside.split(';').map(str::trim).filter(|d| !d.is_empty()) {
        // `uint a, b` declares two; the type is on the first.
        for (k, part) in decl.split(',').enumerate() {
            let (head, array) = match part.split_once('[') {
                Some((head, rest)) => (head, rest.split(']').next().map(str::trim)),
                None => (part, None),
            };
            let name = head.split_whitespace().last().unwrap_or("");
            if k > 0 || !name.is_empty() {
                fields.push(match array {
                    Some(n) => format!("{name}[{n}]"),
                    None => name.to_string(),
                });
            }
        }
    }
    fields
}

/// The text between the `{` at or after `from` and its matching `}`, with the brace's offset.
fn braced(text: &str, from: usize) -> Option<(usize, &str)> {
    let open = from + text[from..].find('{')?;
    let mut depth = 0;
    for (i, c) in text[open..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return Some((open, &text[open + 1..open + i]));
                }
            }
            _ => {}
        }
    }
    None
}

/// Where something was declared: file and line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Place {
    /// The file, as `shaders/NAME` or `cuda/NAME`.
    pub file: String,
    /// 1-based.
    pub line: usize,
}

impl std::fmt::Display for Place {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

/// What a GLSL kernel (with its includes) declares.
#[derive(Debug, Default)]
pub struct GlslInterface {
    /// Whether the workgroup size is `layout(local_size_x_id = 0) in;`, and where, if declared
    /// at all (with the id it names).
    pub local_size: Option<(u32, Place)>,
    /// Every `layout(constant_id = N) const ... NAME`: (name, N, where).
    pub constants: Vec<(String, u32, Place)>,
    /// The push-constant block's fields, and where it is.
    pub params: Option<(Vec<String>, Place)>,
}

/// Reads the interface of a GLSL kernel from its files (as [`resolve`] returns them, named
/// within `shaders/`).
pub fn glsl_interface(files: &[(String, String)]) -> GlslInterface {
    let mut iface = GlslInterface::default();
    for (name, text) in files {
        let text = strip(text);
        let place = |offset| Place {
            file: format!("shaders/{name}"),
            line: line_of(&text, offset),
        };
        let number_after = |from: usize| -> Option<u32> {
            let rest = text[from..].trim_start().strip_prefix('=')?.trim_start();
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        };
        for (at, word) in identifiers(&text) {
            let after = at + word.len();
            match word {
                "local_size_x_id" => {
                    let id = number_after(after).unwrap_or(u32::MAX);
                    iface.local_size = Some((id, place(at)));
                }
                "constant_id" => {
                    let id = number_after(after).unwrap_or(u32::MAX);
                    let decl = text[after..].split(';').next().unwrap_or("");
                    let decl = decl.split_once(')').map_or(decl, |(_, d)| d);
                    let decl = decl.split('=').next().unwrap_or("");
                    let name = identifiers(decl).last().map_or("", |(_, n)| n);
                    iface.constants.push((name.to_string(), id, place(at)));
                }
                "push_constant" => {
                    if let Some((_, inside)) = braced(&text, after) {
                        iface.params = Some((block_fields(inside), place(at)));
                    }
                }
                _ => {}
            }
        }
    }
    iface
}

/// What a CUDA kernel (its `.cu` with `common.cuh` and its includes) declares.
#[derive(Debug, Default)]
pub struct CudaInterface {
    /// Whether `extern "C" __global__ ... void NAME(` was found, and where.
    pub entry: Option<Place>,
    /// The macros it reads that nothing in its sources defines (so `-D` must): upper-case
    /// identifiers of two or more characters, less those that start `XW_` (the backend's own,
    /// such as `XW_T`), `#define`d names, `typedef`s and template parameters. With where each is first read.
    pub constants: Vec<(String, Place)>,
    /// The fields of the struct the entry point takes by value, with the struct's name and
    /// place, if it takes one.
    pub params: Option<(String, Vec<String>, Place)>,
}

/// Reads the interface of CUDA kernel `kernel` from its files (as [`resolve`] returns them,
/// named within `cuda/`).
pub fn cuda_interface(kernel: &str, files: &[(String, String)]) -> CudaInterface {
    let stripped: Vec<(String, String)> = files
        .iter()
        .map(|(name, text)| (format!("cuda/{name}"), strip(text)))
        .collect();
    let mut defined = BTreeSet::new();
    let mut structs = Vec::new();
    for (file, text) in &stripped {
        let words: Vec<(usize, &str)> = identifiers(text).collect();
        for (i, &(at, word)) in words.iter().enumerate() {
            let next = words.get(i + 1).map(|w| w.1);
            match word {
                "define" if text[..at].trim_end().ends_with('#') => {
                    defined.extend(next.map(str::to_string));
                }
                "struct" => {
                    if let Some(name) = next {
                        structs.push((name.to_string(), file.clone(), words[i + 1].0));
                    }
                }
                "typedef" => {
                    // `typedef ... NAME;` names a type, no macro.
                    let from = at + word.len();
                    if let Some(end) = text[from..].find(';') {
                        if let Some((_, name)) = identifiers(&text[from..from + end]).last() {
                            defined.insert(name.to_string());
                        }
                    }
                }
                "template" => {
                    // Every identifier of the parameter list `<...>` is a parameter or a
                    // type; none is a macro.
                    let from = at + word.len();
                    if let Some(end) = text[from..].find('>') {
                        for (_, p) in identifiers(&text[from..from + end]) {
                            defined.insert(p.to_string());
                        }
                    }
                }
                _ => {}
            }
        }
    }
    let mut iface = CudaInterface::default();
    let mut seen = BTreeSet::new();
    for (file, text) in &stripped {
        for (at, word) in identifiers(text) {
            let upper = word.len() >= 2
                && word.starts_with(|c: char| c.is_ascii_uppercase())
                && word
                    .chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
            if upper && !word.starts_with("XW_") && !defined.contains(word) && seen.insert(word) {
                iface.constants.push((
                    word.to_string(),
                    Place {
                        file: file.clone(),
                        line: line_of(text, at),
                    },
                ));
            }
        }
        // The entry point: `void NAME(` in a declaration that says `__global__`.
        let words: Vec<(usize, &str)> = identifiers(text).collect();
        for pair in words.windows(2) {
            let ((_, void), (at, word)) = (pair[0], pair[1]);
            let after = at + word.len();
            if void != "void" || word != kernel || !text[after..].trim_start().starts_with('(') {
                continue;
            }
            let statement = text[..at].rfind([';', '}']).map_or(0, |s| s + 1);
            let Some(g) = text[statement..at].find("__global__") else {
                continue;
            };
            iface.entry = Some(Place {
                file: file.clone(),
                line: line_of(text, statement + g),
            });
            let open = after + text[after..].find('(').unwrap_or(0);
            iface.params = entry_params(text, open, &structs, &stripped);
        }
    }
    iface
}

/// The struct parameter of the entry point whose parameter list opens at `open`: its name,
/// fields and place.
fn entry_params(
    text: &str,
    open: usize,
    structs: &[(String, String, usize)],
    files: &[(String, String)],
) -> Option<(String, Vec<String>, Place)> {
    let close = open + text[open..].find(')')?;
    for param in text[open + 1..close].split(',') {
        if param.contains('*') || param.contains('&') {
            continue;
        }
        for (_, word) in identifiers(param) {
            if let Some((name, file, at)) = structs.iter().find(|s| s.0 == word) {
                let body = &files.iter().find(|f| &f.0 == file)?.1;
                let (_, inside) = braced(body, *at)?;
                return Some((
                    name.clone(),
                    block_fields(inside),
                    Place {
                        file: file.clone(),
                        line: line_of(body, *at),
                    },
                ));
            }
        }
    }
    None
}

fn names(list: &[&str]) -> String {
    if list.is_empty() {
        "none".to_string()
    } else {
        list.join(", ")
    }
}

fn describe(block: Option<&ParamBlock>) -> String {
    match block {
        Some(b) => format!("{} [{}]", b.name, b.fields.join(", ")),
        None => "no parameter block".to_string(),
    }
}

/// Checks a GLSL kernel's interface against the table; every difference is one message
/// naming the file, the kernel and the constant or field.
pub fn check_glsl(k: &KernelDef, iface: &GlslInterface) -> Vec<String> {
    let comp = format!("shaders/{}.comp", k.name);
    let name = k.name;
    let mut errors = Vec::new();
    match &iface.local_size {
        Some((0, _)) => {}
        Some((id, place)) => errors.push(format!(
            "{place}: kernel `{name}`: the workgroup size is specialization constant {id}; \
             xwarp sets constant 0 (`layout(local_size_x_id = 0) in;`)"
        )),
        None => errors.push(format!(
            "{comp}: kernel `{name}`: no `layout(local_size_x_id = 0) in;` (xwarp sets the \
             workgroup size through specialization constant 0)"
        )),
    }
    let vulkan: Vec<&str> = k
        .consts
        .iter()
        .filter(|c| c.on != On::Cuda)
        .map(|c| c.name)
        .collect();
    let mut ids = BTreeSet::new();
    let mut declared = BTreeSet::new();
    for (constant, id, place) in &iface.constants {
        if *id == 0 || !ids.insert(*id) {
            errors.push(format!(
                "{place}: kernel `{name}`: specialization constant `{constant}` has \
                 constant_id {id}, which {}",
                if *id == 0 {
                    "is the workgroup size's"
                } else {
                    "another constant of the kernel has"
                }
            ));
        }
        if !declared.insert(constant.as_str()) {
            errors.push(format!(
                "{place}: kernel `{name}`: specialization constant `{constant}` is declared twice"
            ));
        }
        if !vulkan.contains(&constant.as_str()) {
            let why = match k.constant(constant) {
                Some(c) if c.on == On::Cuda => {
                    "src/kernels/table.rs says only the CUDA twin reads it".to_string()
                }
                _ => format!(
                    "src/kernels/table.rs does not list it (its constants on Vulkan: {})",
                    names(&vulkan)
                ),
            };
            errors.push(format!(
                "{place}: kernel `{name}`: specialization constant `{constant}` (constant_id \
                 {id}): {why}"
            ));
        }
    }
    for constant in &vulkan {
        if !declared.contains(constant) {
            errors.push(format!(
                "{comp}: kernel `{name}`: src/kernels/table.rs lists specialization constant \
                 `{constant}`, which the shader and its includes do not declare"
            ));
        }
    }
    let found = iface.params.as_ref().map(|(fields, _)| fields);
    let want = k.params.map(|p| p.fields);
    let same = match (found, want) {
        (Some(f), Some(w)) => f.iter().map(String::as_str).eq(w.iter().copied()),
        (None, None) => true,
        _ => false,
    };
    if !same {
        let (at, fields) = match &iface.params {
            Some((fields, place)) => (place.to_string(), format!("[{}]", fields.join(", "))),
            None => (comp.clone(), "no push-constant block".to_string()),
        };
        errors.push(format!(
            "{at}: kernel `{name}`: push constants {fields} differ from src/kernels/table.rs's {}",
            describe(k.params)
        ));
    }
    errors
}

/// Checks a CUDA twin's interface against the table, as [`check_glsl`] does.
pub fn check_cuda(k: &KernelDef, iface: &CudaInterface) -> Vec<String> {
    let cu = format!("cuda/{}.cu", k.name);
    let name = k.name;
    let mut errors = Vec::new();
    let cuda: Vec<&str> = k
        .consts
        .iter()
        .filter(|c| c.on != On::Vulkan)
        .map(|c| c.name)
        .collect();
    for (constant, place) in &iface.constants {
        if !cuda.contains(&constant.as_str()) {
            let why = match k.constant(constant) {
                Some(c) if c.on == On::Vulkan => {
                    "src/kernels/table.rs says only the GLSL kernel reads it".to_string()
                }
                _ => format!(
                    "src/kernels/table.rs does not list it (its constants on CUDA: {})",
                    names(&cuda)
                ),
            };
            errors.push(format!(
                "{place}: kernel `{name}`: reads `{constant}`, which no source defines (so it \
                 would have to come from -D): {why}"
            ));
        }
    }
    for constant in &cuda {
        if !iface.constants.iter().any(|(c, _)| c == constant) {
            errors.push(format!(
                "{cu}: kernel `{name}`: src/kernels/table.rs lists constant `{constant}` for \
                 CUDA, which the source and its includes never read"
            ));
        }
    }
    if iface.entry.is_none() {
        errors.push(format!(
            "{cu}: kernel `{name}`: no `extern \"C\" __global__ void {name}(` entry point"
        ));
        return errors;
    }
    let found = iface.params.as_ref().map(|(_, fields, _)| fields);
    let want = k.params.map(|p| p.fields);
    let same = match (found, want) {
        (Some(f), Some(w)) => f.iter().map(String::as_str).eq(w.iter().copied()),
        (None, None) => true,
        _ => false,
    };
    if !same {
        let (at, fields) = match &iface.params {
            Some((s, fields, place)) => (place.to_string(), format!("{s} [{}]", fields.join(", "))),
            None => (cu.clone(), "no parameter struct".to_string()),
        };
        errors.push(format!(
            "{at}: kernel `{name}`: parameters {fields} differ from src/kernels/table.rs's {}",
            describe(k.params)
        ));
    }
    errors
}

/// Checks the table itself and its agreement with the files in `shaders/` and `cuda/` (file
/// stems of `.comp` and `.cu` files, and the `.comp` texts): every kernel has a shader, every
/// shader and CUDA source is a kernel of the table, variants are known names, and no shader
/// names its variants itself any more (the table is their one source).
pub fn check_table(comps: &[(String, String)], cus: &[String]) -> Vec<String> {
    let mut errors = Vec::new();
    let mut seen = BTreeSet::new();
    for k in KERNELS {
        if !seen.insert(k.name) {
            errors.push(format!(
                "src/kernels/table.rs: kernel `{}` is listed twice",
                k.name
            ));
        }
        if !comps.iter().any(|(stem, _)| stem == k.name) {
            errors.push(format!(
                "src/kernels/table.rs: kernel `{}` has no shaders/{}.comp",
                k.name, k.name
            ));
        }
        let has_cu = cus.iter().any(|stem| stem == k.name);
        if k.cuda != has_cu {
            errors.push(format!(
                "src/kernels/table.rs: kernel `{}` says cuda: {}, but cuda/{}.cu {}",
                k.name,
                k.cuda,
                k.name,
                if has_cu { "exists" } else { "does not exist" }
            ));
        }
        if k.variants.is_empty() {
            errors.push(format!(
                "src/kernels/table.rs: kernel `{}` has no variants",
                k.name
            ));
        }
        for v in k.variants {
            if !ELEMENT_VARIANTS.contains(v)
                && !BIT_VARIANTS.contains(v)
                && !SUBNORMAL_VARIANTS.contains(v)
                && !MEMORY_MODEL_VARIANTS.contains(v)
                && !INT64_BIT_VARIANTS.contains(v)
            {
                errors.push(format!(
                    "src/kernels/table.rs: kernel `{}`: unknown variant `{v}`",
                    k.name
                ));
            }
        }
        let mut consts = BTreeSet::new();
        for c in k.consts {
            if !consts.insert(c.name) || c.values.is_empty() {
                errors.push(format!(
                    "src/kernels/table.rs: kernel `{}`: constant `{}` is listed twice or \
                     without values",
                    k.name, c.name
                ));
            }
        }
    }
    for (stem, text) in comps {
        if !KERNELS.iter().any(|k| k.name == stem.as_str()) {
            errors.push(format!(
                "shaders/{stem}.comp: kernel `{stem}` is not in src/kernels/table.rs"
            ));
        }
        if let Some(n) = text
            .lines()
            .position(|l| l.trim().starts_with("// variants:"))
        {
            errors.push(format!(
                "shaders/{stem}.comp:{}: kernel `{stem}`: variants are listed in \
                 src/kernels/table.rs, not in the shader",
                n + 1
            ));
        }
    }
    for stem in cus {
        if !KERNELS.iter().any(|k| k.name == stem.as_str()) {
            errors.push(format!(
                "cuda/{stem}.cu: kernel `{stem}` is not in src/kernels/table.rs"
            ));
        }
    }
    errors
}
