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
/// `OpDecorate`.
const OP_DECORATE: u32 = 71;
/// `OpMemberDecorate`.
const OP_MEMBER_DECORATE: u32 = 72;
/// `OpVariable`.
const OP_VARIABLE: u32 = 59;
/// `OpTypePointer`.
const OP_TYPE_POINTER: u32 = 32;
/// `OpTypeStruct`.
const OP_TYPE_STRUCT: u32 = 30;
/// Decoration `Binding`.
const DECORATION_BINDING: u32 = 33;
/// Decoration `DescriptorSet`.
const DECORATION_DESCRIPTOR_SET: u32 = 34;
/// Decoration `NonWritable`.
const DECORATION_NON_WRITABLE: u32 = 24;
/// Storage class `Uniform` (buffer blocks of SPIR-V before 1.3 too).
const STORAGE_UNIFORM: u32 = 2;
/// Storage class `StorageBuffer`.
const STORAGE_STORAGE_BUFFER: u32 = 12;
/// Storage class `PushConstant`.
const STORAGE_PUSH_CONSTANT: u32 = 9;
/// `OpTypeInt`.
const OP_TYPE_INT: u32 = 21;
/// `OpTypeVector`.
const OP_TYPE_VECTOR: u32 = 23;
/// Decoration `Offset`.
const DECORATION_OFFSET: u32 = 35;
/// Decoration `ArrayStride`.
const DECORATION_ARRAY_STRIDE: u32 = 6;
/// `OpTypeArray`.
const OP_TYPE_ARRAY: u32 = 28;
/// `OpConstant`.
const OP_CONSTANT: u32 = 43;
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

/// Which bindings of descriptor set 0 a module declares, and which of those it may write: the
/// dependencies between launches ([`super::stream`]) follow from it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BindingUse {
    /// Bit `i`: binding `i` is declared (read, and written unless `written` says otherwise).
    pub declared: u64,
    /// Bit `i`: binding `i` may be written (it is not `NonWritable`, as a GLSL `readonly`
    /// buffer is).
    pub written: u64,
}

impl BindingUse {
    /// Every binding read and written: what a module that cannot be read is taken to do.
    pub const ALL: BindingUse = BindingUse {
        declared: u64::MAX,
        written: u64::MAX,
    };

    /// Whether binding `i` is read or written.
    pub fn uses(&self, i: usize) -> bool {
        i >= 64 || self.declared >> i & 1 == 1
    }

    /// Whether binding `i` may be written.
    pub fn writes(&self, i: usize) -> bool {
        i >= 64 || self.written >> i & 1 == 1
    }
}

/// How `words` uses the bindings of descriptor set 0 ([`BindingUse`]): a buffer variable is
/// read-only where it, or every member of its block, is decorated `NonWritable`. Anything the
/// reader does not follow (a set other than 0, a binding past 63, a variable without a
/// binding, a module it cannot parse) gives [`BindingUse::ALL`].
pub(crate) fn binding_use(words: &[u32]) -> BindingUse {
    binding_use_of(words).unwrap_or(BindingUse::ALL)
}

fn binding_use_of(words: &[u32]) -> Option<BindingUse> {
    use std::collections::HashMap;
    let list = instructions(words)?;
    let mut binding: HashMap<u32, u32> = HashMap::new();
    let mut set: HashMap<u32, u32> = HashMap::new();
    let mut non_writable: std::collections::HashSet<u32> = Default::default();
    // Per struct type: members decorated NonWritable.
    let mut member_non_writable: HashMap<u32, u64> = HashMap::new();
    let mut members: HashMap<u32, usize> = HashMap::new();
    let mut pointee: HashMap<u32, u32> = HashMap::new();
    let mut variables = Vec::new();
    for &(at, op, count) in &list {
        let w = &words[at + 1..at + count];
        match op {
            OP_DECORATE if w.len() >= 2 => match w[1] {
                DECORATION_BINDING if w.len() >= 3 => {
                    binding.insert(w[0], w[2]);
                }
                DECORATION_DESCRIPTOR_SET if w.len() >= 3 => {
                    set.insert(w[0], w[2]);
                }
                DECORATION_NON_WRITABLE => {
                    non_writable.insert(w[0]);
                }
                _ => {}
            },
            OP_MEMBER_DECORATE if w.len() >= 3 && w[2] == DECORATION_NON_WRITABLE => {
                if w[1] >= 64 {
                    return None;
                }
                *member_non_writable.entry(w[0]).or_default() |= 1 << w[1];
            }
            OP_TYPE_STRUCT if !w.is_empty() => {
                members.insert(w[0], w.len() - 1);
            }
            OP_TYPE_POINTER if w.len() >= 3 => {
                pointee.insert(w[0], w[2]);
            }
            OP_VARIABLE
                if w.len() >= 3 && matches!(w[2], STORAGE_UNIFORM | STORAGE_STORAGE_BUFFER) =>
            {
                variables.push((w[0], w[1]));
            }
            _ => {}
        }
    }
    let mut out = BindingUse {
        declared: 0,
        written: 0,
    };
    for (ty, id) in variables {
        let b = *binding.get(&id)?;
        if set.get(&id).copied().unwrap_or(0) != 0 || b >= 64 {
            return None;
        }
        let block = *pointee.get(&ty)?;
        let n = *members.get(&block)?;
        if n > 64 {
            return None;
        }
        let all_members = if n == 64 { u64::MAX } else { (1u64 << n) - 1 };
        let read_only = non_writable.contains(&id)
            || (n > 0
                && member_non_writable.get(&block).copied().unwrap_or(0) & all_members
                    == all_members);
        out.declared |= 1 << b;
        if !read_only {
            out.written |= 1 << b;
        }
    }
    Some(out)
}

/// The bytes of push constants `words` declares: the end of the last member of its push
/// constant block, in whole words (0 without one). `None` where the reader does not follow the
/// block (a member that is not a scalar, vector or array of them of 8 to 64 bits, an array
/// without a stride, a member without an offset, more than one block, a module it cannot
/// parse): the caller then pushes all it has.
pub(crate) fn push_constant_bytes(words: &[u32]) -> Option<u32> {
    use std::collections::HashMap;
    let list = instructions(words)?;
    // Per type: its size in bytes (scalars, vectors, arrays of them).
    let mut size: HashMap<u32, u32> = HashMap::new();
    let mut constant: HashMap<u32, u32> = HashMap::new();
    let mut stride: HashMap<u32, u32> = HashMap::new();
    let mut members: HashMap<u32, Vec<u32>> = HashMap::new();
    let mut offsets: HashMap<(u32, u32), u32> = HashMap::new();
    let mut pointee: HashMap<u32, u32> = HashMap::new();
    let mut blocks = Vec::new();
    for &(at, op, count) in &list {
        let w = &words[at + 1..at + count];
        match op {
            OP_TYPE_INT | OP_TYPE_FLOAT if w.len() >= 2 && matches!(w[1], 8 | 16 | 32 | 64) => {
                size.insert(w[0], w[1] / 8);
            }
            OP_TYPE_VECTOR if w.len() >= 3 => {
                if let Some(&s) = size.get(&w[1]) {
                    size.insert(w[0], s.checked_mul(w[2])?);
                }
            }
            OP_CONSTANT if w.len() >= 3 => {
                constant.insert(w[1], w[2]);
            }
            OP_DECORATE if w.len() >= 3 && w[1] == DECORATION_ARRAY_STRIDE => {
                stride.insert(w[0], w[2]);
            }
            // Decorations come before types: the stride is known here.
            OP_TYPE_ARRAY if w.len() >= 3 => {
                if let (Some(_), Some(&len), Some(&step)) =
                    (size.get(&w[1]), constant.get(&w[2]), stride.get(&w[0]))
                {
                    size.insert(w[0], len.checked_mul(step)?);
                }
            }
            OP_TYPE_STRUCT if !w.is_empty() => {
                members.insert(w[0], w[1..].to_vec());
            }
            OP_MEMBER_DECORATE if w.len() >= 4 && w[2] == DECORATION_OFFSET => {
                offsets.insert((w[0], w[1]), w[3]);
            }
            OP_TYPE_POINTER if w.len() >= 3 => {
                pointee.insert(w[0], w[2]);
            }
            OP_VARIABLE if w.len() >= 3 && w[2] == STORAGE_PUSH_CONSTANT => {
                blocks.push(w[0]);
            }
            _ => {}
        }
    }
    match blocks[..] {
        [] => Some(0),
        [ty] => {
            let block = *pointee.get(&ty)?;
            let mut end = 0u32;
            for (i, ty) in members.get(&block)?.iter().enumerate() {
                let at = *offsets.get(&(block, i as u32))?;
                end = end.max(at.checked_add(*size.get(ty)?)?);
            }
            Some(end.div_ceil(4).checked_mul(4)?)
        }
        _ => None,
    }
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
    fn bindings_follow_the_decorations() {
        // A module with three buffers: binding 0 NonWritable on its variable, binding 1 on
        // every member of its block, binding 2 on one member of two.
        let mut w = module();
        let dec = |w: &mut Vec<u32>, id, d: &[u32]| {
            w.push(((2 + d.len() as u32) << 16) | OP_DECORATE);
            w.push(id);
            w.extend_from_slice(d);
        };
        dec(&mut w, 20, &[DECORATION_BINDING, 0]);
        dec(&mut w, 20, &[DECORATION_DESCRIPTOR_SET, 0]);
        dec(&mut w, 20, &[DECORATION_NON_WRITABLE]);
        dec(&mut w, 21, &[DECORATION_BINDING, 1]);
        dec(&mut w, 22, &[DECORATION_BINDING, 2]);
        w.extend([4 << 16 | OP_MEMBER_DECORATE, 11, 0, DECORATION_NON_WRITABLE]);
        w.extend([4 << 16 | OP_MEMBER_DECORATE, 12, 1, DECORATION_NON_WRITABLE]);
        w.extend([3 << 16 | OP_TYPE_STRUCT, 10, 2]);
        w.extend([3 << 16 | OP_TYPE_STRUCT, 11, 2]);
        w.extend([4 << 16 | OP_TYPE_STRUCT, 12, 2, 2]);
        for (ptr, block) in [(13, 10), (14, 11), (15, 12)] {
            w.extend([
                4 << 16 | OP_TYPE_POINTER,
                ptr,
                STORAGE_STORAGE_BUFFER,
                block,
            ]);
        }
        for (ptr, var) in [(13, 20), (14, 21), (15, 22)] {
            w.extend([4 << 16 | OP_VARIABLE, ptr, var, STORAGE_STORAGE_BUFFER]);
        }
        let u = binding_use(&w);
        assert_eq!(u.declared, 0b111);
        assert_eq!(u.written, 0b100);
        // Another descriptor set, or a variable without a binding: everything.
        let mut other = w.clone();
        dec(&mut other, 22, &[DECORATION_DESCRIPTOR_SET, 1]);
        assert_eq!(binding_use(&other), BindingUse::ALL);
        let mut unbound = w.clone();
        unbound.extend([4 << 16 | OP_VARIABLE, 13, 23, STORAGE_STORAGE_BUFFER]);
        assert_eq!(binding_use(&unbound), BindingUse::ALL);
        let mut bad = w;
        bad[5] = 0;
        assert_eq!(binding_use(&bad), BindingUse::ALL);
    }

    #[test]
    fn push_constants_end_at_the_last_member() {
        // A block of a u32 at 0, a vec2 of f32 at 8 and a u8 at 16: 17 bytes, 20 pushed.
        let mut w = module();
        w.extend([4 << 16 | OP_TYPE_INT, 4, 32, 0]);
        w.extend([4 << 16 | OP_TYPE_INT, 5, 8, 0]);
        w.extend([4 << 16 | OP_TYPE_VECTOR, 6, 2, 2]); // vec2 of the 32-bit float %2
        for (member, offset) in [(0, 0), (1, 8), (2, 16)] {
            w.extend([
                5 << 16 | OP_MEMBER_DECORATE,
                10,
                member,
                DECORATION_OFFSET,
                offset,
            ]);
        }
        // Members listed out of offset order: the end is the furthest one's.
        w.extend([5 << 16 | OP_TYPE_STRUCT, 10, 4, 6, 5]);
        w.extend([4 << 16 | OP_TYPE_POINTER, 11, STORAGE_PUSH_CONSTANT, 10]);
        assert_eq!(
            push_constant_bytes(&w),
            Some(0),
            "a pointer type alone declares none"
        );
        let mut one = w.clone();
        one.extend([4 << 16 | OP_VARIABLE, 11, 12, STORAGE_PUSH_CONSTANT]);
        assert_eq!(push_constant_bytes(&one), Some(20));
        // A block ending in an array of three u32 (stride 4) at 20: 32 bytes; without its
        // stride: unknown.
        let mut array = module();
        array.extend([4 << 16 | OP_DECORATE, 7, DECORATION_ARRAY_STRIDE, 4]);
        array.extend([5 << 16 | OP_MEMBER_DECORATE, 10, 0, DECORATION_OFFSET, 0]);
        array.extend([5 << 16 | OP_MEMBER_DECORATE, 10, 1, DECORATION_OFFSET, 20]);
        array.extend([4 << 16 | OP_TYPE_INT, 4, 32, 0]);
        array.extend([4 << 16 | OP_CONSTANT, 4, 8, 3]);
        array.extend([4 << 16 | OP_TYPE_ARRAY, 7, 4, 8]);
        array.extend([4 << 16 | OP_TYPE_STRUCT, 10, 4, 7]);
        array.extend([4 << 16 | OP_TYPE_POINTER, 11, STORAGE_PUSH_CONSTANT, 10]);
        array.extend([4 << 16 | OP_VARIABLE, 11, 12, STORAGE_PUSH_CONSTANT]);
        assert_eq!(push_constant_bytes(&array), Some(32));
        let mut no_stride = array.clone();
        let at = no_stride
            .windows(3)
            .position(|x| x == [7, DECORATION_ARRAY_STRIDE, 4])
            .unwrap();
        no_stride[at + 1] = DECORATION_NON_WRITABLE;
        assert_eq!(push_constant_bytes(&no_stride), None);
        // A member without an offset, a member of a type it does not size, two blocks, or
        // garbage: unknown.
        let mut no_offset = one.clone();
        let at = no_offset
            .windows(4)
            .position(|x| x == [10, 2, DECORATION_OFFSET, 16])
            .unwrap();
        no_offset[at + 2] = DECORATION_BINDING;
        assert_eq!(push_constant_bytes(&no_offset), None);
        let mut unsized_member = w.clone();
        unsized_member.extend([3 << 16 | OP_TYPE_STRUCT, 13, 10]);
        unsized_member.extend([5 << 16 | OP_MEMBER_DECORATE, 13, 0, DECORATION_OFFSET, 0]);
        unsized_member.extend([4 << 16 | OP_TYPE_POINTER, 14, STORAGE_PUSH_CONSTANT, 13]);
        unsized_member.extend([4 << 16 | OP_VARIABLE, 14, 15, STORAGE_PUSH_CONSTANT]);
        assert_eq!(push_constant_bytes(&unsized_member), None);
        let mut two = one.clone();
        two.extend([4 << 16 | OP_VARIABLE, 11, 16, STORAGE_PUSH_CONSTANT]);
        assert_eq!(push_constant_bytes(&two), None);
        let mut bad = one;
        bad[5] = 0;
        assert_eq!(push_constant_bytes(&bad), None);
    }

    #[test]
    fn no_widths_leave_the_module_unchanged_and_garbage_is_refused() {
        assert_eq!(with_denorm_preserve(&module(), &[]).unwrap(), module());
        let mut bad = module();
        bad[5] = 0; // a zero word count
        assert!(with_denorm_preserve(&bad, &[32]).is_none());
    }
}
