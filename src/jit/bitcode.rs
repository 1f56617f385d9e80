//! Reads the target triple of LLVM bitcode without LLVM: a bounded reader of the bitstream container,
//! enough to find the `MODULE_CODE_TRIPLE` record of the first module block. `olIsValidBinary` uses it,
//! so deciding whether an image is ours never runs LLVM on untrusted bytes (LLVM's own
//! `getBitcodeTargetTriple` reads the same record).
//!
//! Format (LLVM's "Bitstream Format" documentation): a stream of abbreviation ids of the current width
//! (2 at the top level): 0 `END_BLOCK`, 1 `ENTER_SUBBLOCK` (block id vbr8, new width vbr4, align to 32
//! bits, length in 32-bit words), 2 `DEFINE_ABBREV`, 3 `UNABBREV_RECORD` (code vbr6, count vbr6,
//! operands vbr6), 4+ records abbreviated by a definition of the block or of the `BLOCKINFO` block.
//! Blocks other than `MODULE_BLOCK` (8) and `BLOCKINFO` (0) are skipped by their length.
//! Every read is bounds-checked and the work is bounded by the input's size: garbage is an error.

const MODULE_BLOCK: u64 = 8;
const IDENTIFICATION_BLOCK: u64 = 13;
const BLOCKINFO_BLOCK: u64 = 0;
const MODULE_CODE_TRIPLE: u64 = 2;
const BLOCKINFO_CODE_SETBID: u64 = 1;
const MAX_TRIPLE: usize = 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Literal(u64),
    Fixed(u32),
    Vbr(u32),
    Array,
    Char6,
    Blob,
}

type Abbrev = Vec<Op>;

struct Bits<'a> {
    data: &'a [u8],
    pos: usize, // in bits
}

type R<T> = Result<T, String>;

impl<'a> Bits<'a> {
    fn left(&self) -> usize {
        self.data.len() * 8 - self.pos
    }

    fn fixed(&mut self, width: u32) -> R<u64> {
        if width > 64 {
            return Err(format!("field width {width} > 64"));
        }
        if (width as usize) > self.left() {
            return Err("truncated bitcode".into());
        }
        let mut v = 0u64;
        for i in 0..width as usize {
            let p = self.pos + i;
            let bit = (self.data[p / 8] >> (p % 8)) & 1;
            v |= u64::from(bit) << i;
        }
        self.pos += width as usize;
        Ok(v)
    }

    fn vbr(&mut self, width: u32) -> R<u64> {
        if !(2..=32).contains(&width) {
            return Err(format!("bad VBR width {width}"));
        }
        let hi = 1u64 << (width - 1);
        let mut v = 0u64;
        let mut shift = 0u32;
        loop {
            let piece = self.fixed(width)?;
            if shift >= 64 {
                return Err("VBR value too long".into());
            }
            v |= (piece & (hi - 1)) << shift;
            if piece & hi == 0 {
                return Ok(v);
            }
            shift += width - 1;
        }
    }

    fn align32(&mut self) -> R<()> {
        let p = self.pos.div_ceil(32) * 32;
        if p > self.data.len() * 8 {
            return Err("truncated bitcode".into());
        }
        self.pos = p;
        Ok(())
    }

    fn skip_bits(&mut self, n: usize) -> R<()> {
        if n > self.left() {
            return Err("block or blob extends past the end".into());
        }
        self.pos += n;
        Ok(())
    }
}

fn char6(v: u64) -> u8 {
    b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._"[(v & 63) as usize]
}

fn read_abbrev(b: &mut Bits) -> R<Abbrev> {
    let n = b.vbr(5)? as usize;
    if n > b.left() {
        return Err("abbreviation longer than the input".into());
    }
    let mut ops = Vec::with_capacity(n.min(64));
    let mut i = 0;
    while i < n {
        let literal = b.fixed(1)? == 1;
        let op = if literal {
            Op::Literal(b.vbr(8)?)
        } else {
            match b.fixed(3)? {
                1 => Op::Fixed(u32::try_from(b.vbr(5)?).map_err(|_| "bad width")?),
                2 => Op::Vbr(u32::try_from(b.vbr(5)?).map_err(|_| "bad width")?),
                3 => Op::Array,
                4 => Op::Char6,
                5 => Op::Blob,
                e => return Err(format!("unknown abbreviation encoding {e}")),
            }
        };
        // as LLVM's reader: a zero-width field is the literal 0; wider than 32 bits is an error
        let op = match op {
            Op::Fixed(0) | Op::Vbr(0) => Op::Literal(0),
            Op::Fixed(w) | Op::Vbr(w) if w > 32 => return Err(format!("field width {w} > 32")),
            op => op,
        };
        ops.push(op);
        i += 1;
    }
    if ops.is_empty() {
        return Err("empty abbreviation".into());
    }
    Ok(ops)
}

fn scalar(b: &mut Bits, op: Op) -> R<u64> {
    match op {
        Op::Literal(v) => Ok(v),
        Op::Fixed(w) => b.fixed(w),
        Op::Vbr(w) => b.vbr(w),
        Op::Char6 => b.fixed(6).map(|v| u64::from(char6(v))),
        Op::Array | Op::Blob => Err("malformed abbreviation".into()),
    }
}

/// Reads one record: (code, operands). Operands beyond `keep` are read but not stored.
fn read_record(b: &mut Bits, id: u64, abbrevs: &[Abbrev], keep: usize) -> R<(u64, Vec<u64>)> {
    let mut ops = Vec::new();
    let push = |ops: &mut Vec<u64>, v: u64| {
        if ops.len() < keep {
            ops.push(v);
        }
    };
    if id == 3 {
        let code = b.vbr(6)?;
        let n = b.vbr(6)? as usize;
        if n > b.left() {
            return Err("record longer than the input".into());
        }
        for _ in 0..n {
            let v = b.vbr(6)?;
            push(&mut ops, v);
        }
        return Ok((code, ops));
    }
    let a = abbrevs.get((id - 4) as usize).ok_or_else(|| format!("undefined abbreviation {id}"))?;
    let mut vals = Vec::new();
    let mut i = 0;
    while i < a.len() {
        match a[i] {
            Op::Array => {
                // the element type is the next and last operand (checked where it is used, as LLVM does)
                if i + 2 != a.len() || matches!(a[i + 1], Op::Array | Op::Blob) {
                    return Err("malformed array abbreviation".into());
                }
                let n = b.vbr(6)? as usize;
                if n > b.left() {
                    return Err("array longer than the input".into());
                }
                let elt = a[i + 1];
                for _ in 0..n {
                    let v = scalar(b, elt)?;
                    if vals.len() <= keep {
                        vals.push(v);
                    }
                }
                i += 2;
            }
            Op::Blob => {
                let n = b.vbr(6)? as usize;
                b.align32()?;
                b.skip_bits(n.checked_mul(8).ok_or("blob too long")?)?;
                b.align32()?;
                i += 1;
            }
            op => {
                let v = scalar(b, op)?;
                if vals.len() <= keep {
                    vals.push(v);
                }
                i += 1;
            }
        }
    }
    if vals.is_empty() {
        return Err("record without a code".into());
    }
    let code = vals.remove(0);
    for v in vals {
        push(&mut ops, v);
    }
    Ok((code, ops))
}

/// Reads a BLOCKINFO block's abbreviations into `info` (block id -> abbreviations).
fn read_blockinfo(b: &mut Bits, width: u32, info: &mut Vec<(u64, Abbrev)>) -> R<()> {
    let mut cur: Option<u64> = None;
    loop {
        match b.fixed(width)? {
            0 => return b.align32(),
            1 => skip_block(b)?,
            2 => {
                let a = read_abbrev(b)?;
                let bid = cur.ok_or("abbreviation in BLOCKINFO before SETBID")?;
                info.push((bid, a));
            }
            id => {
                let (code, ops) = read_record(b, id, &[], 1)?;
                if code == BLOCKINFO_CODE_SETBID {
                    cur = Some(*ops.first().ok_or("SETBID without a block id")?);
                }
            }
        }
    }
}

/// After the ENTER_SUBBLOCK abbreviation id: reads (block id, width) and positions after the header.
fn block_header(b: &mut Bits) -> R<(u64, u32, usize)> {
    let id = b.vbr(8)?;
    let width = b.vbr(4)?;
    if !(1..=32).contains(&width) {
        return Err(format!("bad abbreviation width {width}"));
    }
    b.align32()?;
    let words = b.fixed(32)? as usize;
    Ok((id, width as u32, words * 32))
}

/// Reads a block's entries up to its END_BLOCK (after the header), nested blocks included: by their
/// contents, as LLVM's reader parses them, not by their declared length.
fn skip_contents(b: &mut Bits, width: u32, info: &mut Vec<(u64, Abbrev)>, id: u64, depth: u32) -> R<()> {
    if depth > 32 {
        return Err("blocks nested too deeply".into());
    }
    let mut abbrevs: Vec<Abbrev> = info.iter().filter(|(i, _)| *i == id).map(|(_, a)| a.clone()).collect();
    loop {
        match b.fixed(width)? {
            0 => return b.align32(),
            1 => {
                let (nid, w, _) = block_header(b)?;
                if nid == BLOCKINFO_BLOCK {
                    read_blockinfo(b, w, info)?;
                } else {
                    skip_contents(b, w, info, nid, depth + 1)?;
                }
            }
            2 => abbrevs.push(read_abbrev(b)?),
            rid => {
                read_record(b, rid, &abbrevs, 0)?;
            }
        }
    }
}

fn skip_block(b: &mut Bits) -> R<()> {
    let (_, _, len) = block_header(b)?;
    b.skip_bits(len)
}

/// The target triple of raw bitcode (`BC\xC0\xDE...`, already unwrapped): `""` when the module has no
/// triple record; an error for anything that is not well-formed up to that record.
pub(crate) fn triple(bc: &[u8]) -> Result<String, String> {
    if bc.len() < 8 || bc[..4] != super::BC_MAGIC {
        return Err("not LLVM bitcode".into());
    }
    if !bc.len().is_multiple_of(4) {
        return Err("truncated bitcode (not a whole number of 32-bit words)".into());
    }
    let mut b = Bits { data: bc, pos: 32 };
    let mut info: Vec<(u64, Abbrev)> = Vec::new();
    // As LLVM's module list reader: top-level records are skipped, fewer than 8 bytes left end the
    // stream (tools leave padding), the identification block is read by its contents, other blocks
    // are skipped by their length, which must lie inside the data (a truncated image is not valid even
    // when its triple survived the cut). The triple comes from the first module block; what follows it
    // is not looked at (LLVM reads it when compiling).
    let mut top: Vec<Abbrev> = Vec::new();
    while b.pos / 8 + 8 < bc.len() {
        match b.fixed(2)? {
            1 => {
                let (id, width, len) = block_header(&mut b)?;
                let end = b.pos.checked_add(len).filter(|&e| e <= bc.len() * 8).ok_or("truncated bitcode")?;
                if id == BLOCKINFO_BLOCK {
                    read_blockinfo(&mut b, width, &mut info)?;
                } else if id == IDENTIFICATION_BLOCK {
                    skip_contents(&mut b, width, &mut info, id, 0)?;
                } else if id == MODULE_BLOCK {
                    // (its length is only checked: LLVM skips it by length, then parses it by contents)
                    return module_triple(&mut b, width, &mut info);
                } else {
                    b.pos = end;
                }
            }
            0 => return Err("END_BLOCK at the top level".into()),
            2 => top.push(read_abbrev(&mut b)?),
            id => {
                read_record(&mut b, id, &top, 0)?;
            }
        }
    }
    Err("no module in the bitcode".into())
}

fn module_triple(b: &mut Bits, width: u32, info: &mut Vec<(u64, Abbrev)>) -> R<String> {
    let mut abbrevs: Vec<Abbrev> = info.iter().filter(|(id, _)| *id == MODULE_BLOCK).map(|(_, a)| a.clone()).collect();
    loop {
        match b.fixed(width)? {
            0 => return Ok(String::new()),
            1 => {
                // (BLOCKINFO abbreviations apply to blocks entered later, not to this one)
                let (id, w, _) = block_header(b)?;
                if id == BLOCKINFO_BLOCK {
                    read_blockinfo(b, w, info)?;
                } else {
                    skip_contents(b, w, info, id, 1)?;
                }
            }
            2 => abbrevs.push(read_abbrev(b)?),
            id => {
                let (code, ops) = read_record(b, id, &abbrevs, MAX_TRIPLE + 1)?;
                if code == MODULE_CODE_TRIPLE {
                    if ops.len() > MAX_TRIPLE {
                        return Err("target triple too long".into());
                    }
                    // Each operand is one char, truncated to a byte as LLVM's reader does; not UTF-8 is kept
                    // lossily, as the compile path reads it (`to_string_lossy`), so both classify alike.
                    let bytes: Vec<u8> = ops.iter().map(|&v| v as u8).collect();
                    return Ok(String::from_utf8_lossy(&bytes).into_owned());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn garbage_and_truncation_are_errors_not_panics() {
        assert!(triple(b"").is_err());
        assert!(triple(b"BC\xC0\xDE").is_err());
        assert!(triple(b"BC\xC0\xDE\xff\xff\xff\xff\xff\xff\xff\xff").is_err());
        let mut x = b"BC\xC0\xDE".to_vec();
        for i in 0..4096u32 {
            x.push((i.wrapping_mul(2654435761) >> 13) as u8);
        }
        for n in 0..x.len().min(600) {
            let _ = triple(&x[..n]);
        }
    }
}
