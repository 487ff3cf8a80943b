//! Small edits of SPIR-V modules before they reach the driver.
//!
//! The shaders are compiled once for every device. What a device can promise about float
//! behaviour is known only when it opens, so the execution modes that ask for it are added to
//! a module's words here, where the device supports them, instead of compiling each shader
//! twice.

/// `OpCapability`.
const OP_CAPABILITY: u32 = 17;
/// `OpExtension`.
const OP_EXTENSION: u32 = 10;
/// `OpEntryPoint`.
const OP_ENTRY_POINT: u32 = 15;
/// `OpExecutionMode`.
const OP_EXECUTION_MODE: u32 = 16;
/// `OpExecutionModeId`.
const OP_EXECUTION_MODE_ID: u32 = 331;
/// `OpTypeFloat`.
const OP_TYPE_FLOAT: u32 = 22;
/// Capability `DenormPreserve` (SPV_KHR_float_controls).
const CAPABILITY_DENORM_PRESERVE: u32 = 4464;
/// Execution mode `DenormPreserve` (SPV_KHR_float_controls), with a target width operand.
const MODE_DENORM_PRESERVE: u32 = 4459;
/// Words of the module header.
const HEADER: usize = 5;
const FLOAT_CONTROLS: &str = "SPV_KHR_float_controls";

/// One instruction: where it starts and its opcode and word count.
fn instructions(words: &[u32]) -> Option<Vec<(usize, u32, usize)>> {
    let mut out = Vec::new();
    let mut at = HEADER;
    while at < words.len() {
        let count = (words[at] >> 16) as usize;
        if count == 0 || at + count > words.len() {
            return None;
        }
        out.push((at, words[at] & 0xffff, count));
        at += count;
    }
    Some(out)
}

/// The widths of the float types a module declares (16, 32, 64), in ascending order.
pub(crate) fn float_widths(words: &[u32]) -> Vec<u32> {
    let mut widths: Vec<u32> = instructions(words)
        .unwrap_or_default()
        .iter()
        .filter(|&&(_, op, count)| op == OP_TYPE_FLOAT && count >= 3)
        .map(|&(at, _, _)| words[at + 2])
        .collect();
    widths.sort_unstable();
    widths.dedup();
    widths
}

/// The words of a nul-terminated literal string, padded to whole words.
fn literal(s: &str) -> Vec<u32> {
    let mut bytes = s.as_bytes().to_vec();
    bytes.push(0);
    while !bytes.len().is_multiple_of(4) {
        bytes.push(0);
    }
    bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// `words` with the `DenormPreserve` execution mode for each width in `widths` on every entry
/// point, and the capability and extension it needs. `None` when the module cannot be parsed
/// (it is then used unchanged, and the driver's own validation speaks).
pub(crate) fn with_denorm_preserve(words: &[u32], widths: &[u32]) -> Option<Vec<u32>> {
    if widths.is_empty() {
        return Some(words.to_vec());
    }
    let list = instructions(words)?;
    let has_capability = list.iter().any(|&(at, op, _)| {
        op == OP_CAPABILITY && words.get(at + 1) == Some(&CAPABILITY_DENORM_PRESERVE)
    });
    let ext = literal(FLOAT_CONTROLS);
    let has_extension = list.iter().any(|&(at, op, count)| {
        op == OP_EXTENSION && count == 1 + ext.len() && words[at + 1..at + count] == ext[..]
    });
    // Capabilities come first, then extensions; entry points, then execution modes.
    let after_capabilities = list
        .iter()
        .filter(|&&(_, op, _)| op == OP_CAPABILITY)
        .map(|&(at, _, count)| at + count)
        .max()?;
    let after_modes = list
        .iter()
        .filter(|&&(_, op, _)| {
            matches!(
                op,
                OP_ENTRY_POINT | OP_EXECUTION_MODE | OP_EXECUTION_MODE_ID
            )
        })
        .map(|&(at, _, count)| at + count)
        .max()?;
    let entries: Vec<u32> = list
        .iter()
        .filter(|&&(_, op, count)| op == OP_ENTRY_POINT && count >= 3)
        .map(|&(at, _, _)| words[at + 2])
        .collect();
    let mut out = Vec::with_capacity(words.len() + 16);
    out.extend_from_slice(&words[..after_capabilities]);
    if !has_capability {
        out.extend([2 << 16 | OP_CAPABILITY, CAPABILITY_DENORM_PRESERVE]);
    }
    if !has_extension {
        out.push(((1 + ext.len() as u32) << 16) | OP_EXTENSION);
        out.extend_from_slice(&ext);
    }
    out.extend_from_slice(&words[after_capabilities..after_modes]);
    for &entry in &entries {
        for &width in widths {
            out.extend([
                4 << 16 | OP_EXECUTION_MODE,
                entry,
                MODE_DENORM_PRESERVE,
                width,
            ]);
        }
    }
    out.extend_from_slice(&words[after_modes..]);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal compute module: capability Shader, memory model, one entry point with a local
    /// size, a float type of 32 bits and one of 64.
    fn module() -> Vec<u32> {
        let mut w = vec![0x0723_0203, 0x0001_0300, 0, 10, 0];
        w.extend([2 << 16 | OP_CAPABILITY, 1]); // Shader
        w.extend([3 << 16 | 14, 0, 1]); // OpMemoryModel Logical GLSL450
        w.extend([5 << 16 | OP_ENTRY_POINT, 5, 1, 0x6e69_616d, 0]); // GLCompute %1 "main"
        w.extend([6 << 16 | OP_EXECUTION_MODE, 1, 17, 1, 1, 1]); // LocalSize 1 1 1
        w.extend([3 << 16 | OP_TYPE_FLOAT, 2, 32]);
        w.extend([3 << 16 | OP_TYPE_FLOAT, 3, 64]);
        w
    }

    #[test]
    fn widths_are_read_from_the_float_types() {
        assert_eq!(float_widths(&module()), [32, 64]);
    }

    #[test]
    fn the_mode_capability_and_extension_land_in_their_sections() {
        let w = with_denorm_preserve(&module(), &[32, 64]).unwrap();
        let list = instructions(&w).unwrap();
        let ops: Vec<u32> = list.iter().map(|i| i.1).collect();
        assert_eq!(
            ops,
            [
                OP_CAPABILITY,
                OP_CAPABILITY,
                OP_EXTENSION,
                14,
                OP_ENTRY_POINT,
                OP_EXECUTION_MODE,
                OP_EXECUTION_MODE,
                OP_EXECUTION_MODE,
                OP_TYPE_FLOAT,
                OP_TYPE_FLOAT
            ]
        );
        let modes: Vec<&[u32]> = list
            .iter()
            .filter(|i| i.1 == OP_EXECUTION_MODE)
            .map(|&(at, _, n)| &w[at + 1..at + n])
            .collect();
        assert_eq!(modes[1], [1, MODE_DENORM_PRESERVE, 32]);
        assert_eq!(modes[2], [1, MODE_DENORM_PRESERVE, 64]);
        let (at, _, n) = list[2];
        let text: Vec<u8> = w[at + 1..at + n]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .take_while(|&b| b != 0)
            .collect();
        assert_eq!(text, FLOAT_CONTROLS.as_bytes());
        // Applying it again adds only the modes: the capability and extension stay single.
        let twice = with_denorm_preserve(&w, &[32]).unwrap();
        assert_eq!(twice.len(), w.len() + 4);
    }

    #[test]
    fn no_widths_leave_the_module_unchanged_and_garbage_is_refused() {
        assert_eq!(with_denorm_preserve(&module(), &[]).unwrap(), module());
        let mut bad = module();
        bad[5] = 0; // a zero word count
        assert!(with_denorm_preserve(&bad, &[32]).is_none());
    }
}
