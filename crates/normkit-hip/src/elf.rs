//! A small reader for AMDGPU code objects (ELF64, little-endian), std only.
//!
//! Reads what the backend checks before loading anything: the target (`e_flags` machine),
//! and for every kernel its descriptor (`<name>.kd`, 64 bytes): wavefront size, scratch, LDS,
//! kernarg size, VGPR allocation. Malformed input gives an [`ElfError`], never a panic.

use std::fmt;

/// `EF_AMDGPU_MACH_*` values of the targets normkit builds.
pub const MACH_GFX90A: u32 = 0x3f;
/// `EF_AMDGPU_MACH_AMDGCN_GFX942`.
pub const MACH_GFX942: u32 = 0x4c;
/// `EF_AMDGPU_MACH_AMDGCN_GFX950`.
pub const MACH_GFX950: u32 = 0x4f;
const EF_AMDGPU_MACH_MASK: u32 = 0xff;
const EM_AMDGPU: u16 = 224;

/// The arch name of an `EF_AMDGPU_MACH` value.
pub fn mach_name(mach: u32) -> Option<&'static str> {
    match mach {
        MACH_GFX90A => Some("gfx90a"),
        MACH_GFX942 => Some("gfx942"),
        MACH_GFX950 => Some("gfx950"),
        _ => None,
    }
}

/// A code object the reader cannot make sense of, with what is wrong in words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ElfError(pub String);

impl fmt::Display for ElfError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "malformed code object: {}", self.0)
    }
}
impl std::error::Error for ElfError {}

/// One kernel's descriptor (AMDHSA `kernel_descriptor_t`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelInfo {
    /// The kernel's symbol (without the `.kd` suffix).
    pub name: String,
    /// LDS bytes.
    pub group_segment_fixed_size: u32,
    /// Scratch bytes per work-item (0 = no spills, no stack).
    pub private_segment_fixed_size: u32,
    /// Bytes of kernel arguments.
    pub kernarg_size: u32,
    /// Wavefront size the kernel was built for (32 or 64).
    pub wavefront_size: u32,
    /// VGPRs allocated per work-item (arch VGPRs + AGPRs, rounded to the allocation granule).
    pub vgprs_allocated: u32,
}

/// What the reader extracts from a code object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeObject {
    /// `EF_AMDGPU_MACH`.
    pub mach: u32,
    /// Every kernel descriptor, in symbol-table order.
    pub kernels: Vec<KernelInfo>,
}

impl CodeObject {
    /// The target name (`"gfx942"`, ...), `None` for a machine normkit does not build for.
    pub fn arch(&self) -> Option<&'static str> {
        mach_name(self.mach)
    }
    /// The descriptor of the kernel called `name`.
    pub fn kernel(&self, name: &str) -> Option<&KernelInfo> {
        self.kernels.iter().find(|k| k.name == name)
    }
}

fn err<T>(msg: impl Into<String>) -> Result<T, ElfError> {
    Err(ElfError(msg.into()))
}

fn bytes(d: &[u8], off: u64, len: u64) -> Result<&[u8], ElfError> {
    let (Ok(start), Ok(len)) = (usize::try_from(off), usize::try_from(len)) else {
        return err("offset out of range");
    };
    match start.checked_add(len) {
        Some(end) if end <= d.len() => Ok(&d[start..end]),
        _ => err(format!("range {off}+{len} beyond the file ({} bytes)", d.len())),
    }
}
/// `a + b`, or an error instead of an overflow.
fn add(a: u64, b: u64) -> Result<u64, ElfError> {
    a.checked_add(b).ok_or(ElfError("offset overflows".into()))
}
fn mul(a: u64, b: u64) -> Result<u64, ElfError> {
    a.checked_mul(b).ok_or(ElfError("offset overflows".into()))
}

fn u16_at(d: &[u8], off: u64) -> Result<u16, ElfError> {
    let b = bytes(d, off, 2)?;
    Ok(u16::from_le_bytes([b[0], b[1]]))
}
fn u32_at(d: &[u8], off: u64) -> Result<u32, ElfError> {
    let b = bytes(d, off, 4)?;
    Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}
fn u64_at(d: &[u8], off: u64) -> Result<u64, ElfError> {
    let b = bytes(d, off, 8)?;
    let mut a = [0u8; 8];
    a.copy_from_slice(b);
    Ok(u64::from_le_bytes(a))
}

struct Section {
    kind: u32,
    addr: u64,
    offset: u64,
    size: u64,
    link: u32,
    entsize: u64,
}

fn c_str(d: &[u8], off: u64) -> Result<String, ElfError> {
    let start = usize::try_from(off).map_err(|_| ElfError("string offset out of range".into()))?;
    if start >= d.len() {
        return err("string offset beyond the file");
    }
    let end = d[start..].iter().position(|&c| c == 0).map(|p| start + p).ok_or(ElfError("unterminated string".into()))?;
    Ok(String::from_utf8_lossy(&d[start..end]).into_owned())
}

/// Parses an AMDGPU ELF64 code object.
pub fn parse(d: &[u8]) -> Result<CodeObject, ElfError> {
    if d.len() < 64 || &d[..4] != b"\x7fELF" {
        return err("not an ELF file (an offload bundle? build with --no-gpu-bundle-output)");
    }
    if d[4] != 2 || d[5] != 1 {
        return err("not ELF64 little-endian");
    }
    if u16_at(d, 18)? != EM_AMDGPU {
        return err("not an AMDGPU object");
    }
    let mach = u32_at(d, 48)? & EF_AMDGPU_MACH_MASK;
    let shoff = u64_at(d, 40)?;
    let shentsize = u64::from(u16_at(d, 58)?);
    let shnum = u64::from(u16_at(d, 60)?);
    if shentsize < 64 {
        return err("section header entries too small");
    }
    let mut sections = Vec::new();
    for i in 0..shnum {
        let h = add(shoff, mul(i, shentsize)?)?;
        bytes(d, h, 64)?;
        sections.push(Section {
            kind: u32_at(d, h + 4)?,
            addr: u64_at(d, h + 16)?,
            offset: u64_at(d, h + 24)?,
            size: u64_at(d, h + 32)?,
            link: u32_at(d, h + 40)?,
            entsize: u64_at(d, h + 56)?,
        });
    }
    const SHT_SYMTAB: u32 = 2;
    let Some(symtab) = sections.iter().find(|s| s.kind == SHT_SYMTAB) else {
        return err("no symbol table");
    };
    let Some(strtab) = sections.get(symtab.link as usize) else {
        return err("symbol table links to no string table");
    };
    if symtab.entsize < 24 {
        return err("symbol entries too small");
    }
    let mut kernels = Vec::new();
    for i in 0..symtab.size / symtab.entsize {
        let s = add(symtab.offset, mul(i, symtab.entsize)?)?;
        bytes(d, s, 24)?;
        let name = c_str(d, add(strtab.offset, u64::from(u32_at(d, s)?))?)?;
        let Some(kernel) = name.strip_suffix(".kd") else { continue };
        let shndx = u16_at(d, s + 6)?;
        let value = u64_at(d, s + 8)?;
        let Some(sec) = sections.get(shndx as usize) else {
            return err(format!("{name}: bad section index"));
        };
        if value < sec.addr || add(value, 64)? > add(sec.addr, sec.size)? {
            return err(format!("{name}: descriptor outside its section"));
        }
        let kd = bytes(d, add(sec.offset, value - sec.addr)?, 64)?;
        let rd32 = |o: usize| u32::from_le_bytes([kd[o], kd[o + 1], kd[o + 2], kd[o + 3]]);
        let rsrc1 = rd32(48);
        let props = u16::from_le_bytes([kd[56], kd[57]]);
        let wave32 = props & (1 << 10) != 0;
        // GRANULATED_WORKITEM_VGPR_COUNT: granule 8 on gfx90a/gfx94x/gfx950 in wave64
        // (unified VGPR/AGPR file), 4 for the older wave64 parts; wave32 parts use 8.
        let granule = if matches!(mach, MACH_GFX90A | MACH_GFX942 | MACH_GFX950) || wave32 { 8 } else { 4 };
        kernels.push(KernelInfo {
            name: kernel.to_string(),
            group_segment_fixed_size: rd32(0),
            private_segment_fixed_size: rd32(4),
            kernarg_size: rd32(8),
            wavefront_size: if wave32 { 32 } else { 64 },
            vgprs_allocated: ((rsrc1 & 0x3f) + 1) * granule,
        });
    }
    Ok(CodeObject { mach, kernels })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_garbage_without_panicking() {
        assert!(parse(&[]).is_err());
        assert!(parse(b"\x7fELF").is_err());
        let mut fake = vec![0u8; 64];
        fake[..4].copy_from_slice(b"\x7fELF");
        fake[4] = 2;
        fake[5] = 1;
        assert!(parse(&fake).is_err());
        // Truncations of a real code object never panic.
        let (_, real) = crate::kernels::CODE_OBJECTS[0];
        for cut in [65, 200, real.len() / 2, real.len() - 1] {
            let _ = parse(&real[..cut]);
        }
    }
}
