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
//!
//! [`check`] walks the whole module before LLVM parses it and rejects the records whose numbers LLVM's
//! reader trusts to size an allocation (an absurd one is an out-of-memory abort, not an error): an
//! attribute group's parameter index (`AttributeList::get` allocates index + 1 sets), a type table's
//! `NUMENTRY` and a function's `DECLAREBLOCKS` (tables of that many entries, each of which needs a record
//! of the same block), the string count of `METADATA_STRINGS` (each string needs a length in the record's
//! offset table) and the case, clause and handler counts of `SWITCH` (old format), `LANDINGPAD` (both
//! formats) and `CATCHSWITCH` (operand space reserved before the operands are read; each needs an
//! operand). The attribute sets that all attribute groups and lists make LLVM allocate together are
//! bounded linearly in the input ([`ATTR_SETS_PER_BIT`]): each alone is, but many could add up to its
//! square. Value and metadata forward references need nothing here: LLVM's reader refuses an index past
//! the stream's size in bytes (`RefsUpperBound` of its value and metadata lists).
//! The blocks [`triple`] reads on its way to the triple record get the same checks.

const MODULE_BLOCK: u64 = 8;
const IDENTIFICATION_BLOCK: u64 = 13;
const BLOCKINFO_BLOCK: u64 = 0;
const MODULE_CODE_TRIPLE: u64 = 2;
const BLOCKINFO_CODE_SETBID: u64 = 1;
const MAX_TRIPLE: usize = 1024;
const PARAMATTR_BLOCK: u64 = 9;
const PARAMATTR_GROUP_BLOCK: u64 = 10;
const PARAMATTR_CODE_ENTRY: u64 = 2;
const FUNCTION_BLOCK: u64 = 12;
const METADATA_BLOCK: u64 = 15;
const TYPE_BLOCK: u64 = 17;
const PARAMATTR_GRP_CODE_ENTRY: u64 = 3;
const TYPE_CODE_NUMENTRY: u64 = 1;
const METADATA_STRINGS: u64 = 35;
const FUNC_CODE_DECLAREBLOCKS: u64 = 1;
const FUNC_CODE_INST_SWITCH: u64 = 12;
const FUNC_CODE_INST_LANDINGPAD_OLD: u64 = 40;
const FUNC_CODE_INST_LANDINGPAD: u64 = 47;
const FUNC_CODE_INST_CATCHSWITCH: u64 = 52;
/// The old `SWITCH` record's marker in the high bits of its first operand.
const SWITCH_INST_MAGIC: u64 = 0x4B5;
/// Operands [`check_record`] looks at (all of an attribute list's).
const CHECKED_OPS: usize = 5;
/// Attribute sets (8 bytes each) that the attribute groups and lists of a module may make LLVM allocate
/// in all, per bit of input, plus [`ATTR_SETS_SLACK`]: linear in the input, where each record alone
/// (bounded by the input) could add up to its square.
const ATTR_SETS_PER_BIT: usize = 8;
const ATTR_SETS_SLACK: usize = 1 << 20;

/// What [`check_record`] adds up over the whole module.
#[derive(Default)]
struct Tally {
    /// attribute group id -> the sets of its `AttributeList` (parameter index + 2)
    groups: std::collections::HashMap<u64, u64>,
    /// attribute sets allocated so far by groups and lists
    attr_sets: u64,
}

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
        // the (at most 9) bytes holding the field, little-endian, in one window
        let (byte, off) = (self.pos / 8, self.pos % 8);
        let mut window = [0u8; 16];
        let n = (self.data.len() - byte).min(16);
        window[..n].copy_from_slice(&self.data[byte..byte + n]);
        let v = (u128::from_le_bytes(window) >> off) as u64;
        self.pos += width as usize;
        Ok(if width == 64 { v } else { v & ((1u64 << width) - 1) })
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
    read_record_counted(b, id, abbrevs, keep).map(|(code, ops, _)| (code, ops))
}

/// [`read_record`], with the record's operand count (a blob counts as one operand).
fn read_record_counted(b: &mut Bits, id: u64, abbrevs: &[Abbrev], keep: usize) -> R<(u64, Vec<u64>, usize)> {
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
        return Ok((code, ops, n));
    }
    let a = abbrevs.get((id - 4) as usize).ok_or_else(|| format!("undefined abbreviation {id}"))?;
    let mut vals = Vec::new();
    let mut count = 0usize;
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
                count += n;
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
                count += 1;
                i += 1;
            }
            op => {
                count += 1;
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
    Ok((code, ops, count - 1))
}

/// Rejects a record of block `block` whose numbers LLVM's reader would trust to size an allocation (see
/// the module comment). `ops` holds the first [`CHECKED_OPS`] of its `n` operands; `declared` takes a
/// table size the block's records must fill (checked at the block's end).
fn check_record(
    block: u64,
    code: u64,
    ops: &[u64],
    n: usize,
    input_bits: usize,
    declared: &mut u64,
    tally: &mut Tally,
) -> R<()> {
    let op = |i: usize| ops.get(i).copied();
    let add_sets = |tally: &mut Tally, sets: u64| {
        tally.attr_sets = tally.attr_sets.saturating_add(sets);
        let max = (input_bits * ATTR_SETS_PER_BIT + ATTR_SETS_SLACK) as u64;
        if tally.attr_sets > max {
            return Err(format!(
                "attribute groups and lists of {} attribute sets in all, more than the bitcode can declare ({max})",
                tally.attr_sets
            ));
        }
        Ok(())
    };
    let within = |what: &str, v: Option<u64>, max: usize| match v {
        Some(v) if v > max as u64 => Err(format!("{what} {v} is more than the record can hold ({max})")),
        _ => Ok(()),
    };
    match (block, code) {
        (PARAMATTR_GROUP_BLOCK, PARAMATTR_GRP_CODE_ENTRY) => {
            // LLVM keeps the index as 32 bits; ~0U is the function, 0 the return value, k the k-th
            // parameter: a parameter needs an operand (at least one bit) in some function's type.
            let idx = op(1).map(|v| v as u32);
            if let Some(idx) = idx.filter(|&i| i != u32::MAX && i as usize > input_bits) {
                return Err(format!("attribute group for parameter index {idx}, more than the bitcode can declare"));
            }
            // AttributeList::get(index, ...) makes index + 2 sets (the function's, the return value's,
            // one per parameter up to the index); a list of groups as many as its largest group's
            let sets = idx.map_or(1, |i| if i == u32::MAX { 1 } else { u64::from(i) + 2 });
            if let Some(g) = op(0) {
                tally.groups.insert(g, sets);
            }
            add_sets(tally, sets)?;
        }
        (PARAMATTR_BLOCK, PARAMATTR_CODE_ENTRY) => {
            let sets = ops.iter().filter_map(|g| tally.groups.get(g)).copied().max().unwrap_or(0);
            add_sets(tally, sets)?;
        }
        (TYPE_BLOCK, TYPE_CODE_NUMENTRY) | (FUNCTION_BLOCK, FUNC_CODE_DECLAREBLOCKS) => {
            *declared = (*declared).max(op(0).unwrap_or(0));
        }
        (METADATA_BLOCK, METADATA_STRINGS) => {
            // [count, offset] blob: the blob starts with `offset` bytes of vbr6 lengths, one per string
            let offset = op(1).unwrap_or(0);
            within("metadata string table offset", Some(offset), input_bits / 8)?;
            within("metadata string count", op(0), offset as usize * 8 / 6)?;
        }
        (FUNCTION_BLOCK, FUNC_CODE_INST_SWITCH) if op(0).is_some_and(|v| v >> 16 == SWITCH_INST_MAGIC) => {
            within("switch case count", op(4), n)?;
        }
        (FUNCTION_BLOCK, FUNC_CODE_INST_LANDINGPAD) => within("landingpad clause count", op(2), n)?,
        // [ty, persfn (value, and its type when a forward reference), cleanup, clauses, ...]: the clause
        // count is operand 3 or 4; in a well-formed record both are at most the operand count
        (FUNCTION_BLOCK, FUNC_CODE_INST_LANDINGPAD_OLD) => {
            within("landingpad clause count", op(3), n)?;
            within("landingpad clause count", op(4), n)?;
        }
        (FUNCTION_BLOCK, FUNC_CODE_INST_CATCHSWITCH) => within("catchswitch handler count", op(1), n)?,
        _ => {}
    }
    Ok(())
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
fn skip_contents(
    b: &mut Bits,
    width: u32,
    info: &mut Vec<(u64, Abbrev)>,
    id: u64,
    depth: u32,
    tally: &mut Tally,
) -> R<()> {
    if depth > 32 {
        return Err("blocks nested too deeply".into());
    }
    let mut abbrevs: Vec<Abbrev> = info.iter().filter(|(i, _)| *i == id).map(|(_, a)| a.clone()).collect();
    let input_bits = b.data.len() * 8;
    let (mut records, mut declared) = (0u64, 0u64);
    loop {
        match b.fixed(width)? {
            0 => {
                if declared > records {
                    let what = if id == TYPE_BLOCK { "type table entries" } else { "basic blocks" };
                    return Err(format!("{declared} {what} declared in a block of {records} records"));
                }
                return b.align32();
            }
            1 => {
                let (nid, w, _) = block_header(b)?;
                if nid == BLOCKINFO_BLOCK {
                    read_blockinfo(b, w, info)?;
                } else {
                    skip_contents(b, w, info, nid, depth + 1, tally)?;
                }
            }
            2 => abbrevs.push(read_abbrev(b)?),
            rid => {
                let keep = if id == PARAMATTR_BLOCK { usize::MAX } else { CHECKED_OPS };
                let (code, ops, n) = read_record_counted(b, rid, &abbrevs, keep)?;
                check_record(id, code, &ops, n, input_bits, &mut declared, tally)?;
                records += 1;
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
    let (mut b, width, mut info) = first_module(bc)?;
    module_triple(&mut b, width, &mut info)
}

/// Walks the whole first module of raw bitcode as LLVM's reader will, with [`check_record`] on every
/// record: an error for what LLVM must not be given (see the module comment).
pub(crate) fn check(bc: &[u8]) -> Result<(), String> {
    let (mut b, width, mut info) = first_module(bc)?;
    skip_contents(&mut b, width, &mut info, MODULE_BLOCK, 0, &mut Tally::default())
}

/// (reader, abbreviation width, BLOCKINFO abbreviations so far) just inside the first module block.
type ModuleStart<'a> = (Bits<'a>, u32, Vec<(u64, Abbrev)>);

/// Positions after the header of the first module block.
fn first_module(bc: &[u8]) -> R<ModuleStart<'_>> {
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
    // when its triple survived the cut). The triple and the check read the first module block; what
    // follows it is not looked at (LLVM reads it when compiling).
    let mut top: Vec<Abbrev> = Vec::new();
    while b.pos / 8 + 8 < bc.len() {
        match b.fixed(2)? {
            1 => {
                let (id, width, len) = block_header(&mut b)?;
                let end = b.pos.checked_add(len).filter(|&e| e <= bc.len() * 8).ok_or("truncated bitcode")?;
                if id == BLOCKINFO_BLOCK {
                    read_blockinfo(&mut b, width, &mut info)?;
                } else if id == IDENTIFICATION_BLOCK {
                    skip_contents(&mut b, width, &mut info, id, 0, &mut Tally::default())?;
                } else if id == MODULE_BLOCK {
                    // (its length is only checked: LLVM skips it by length, then parses it by contents)
                    return Ok((b, width, info));
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
    let mut tally = Tally::default();
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
                    skip_contents(b, w, info, id, 1, &mut tally)?;
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
            let _ = check(&x[..n]);
        }
    }

    /// A bitstream writer for hand-built modules: unabbreviated records only.
    struct W {
        bits: Vec<bool>,
        width: Vec<(u32, usize)>, // (abbreviation width, bit index of the length word) per open block
    }

    impl W {
        fn new() -> W {
            let mut w = W { bits: Vec::new(), width: Vec::new() };
            for byte in super::super::BC_MAGIC {
                w.fixed(u64::from(byte), 8);
            }
            w
        }
        fn fixed(&mut self, v: u64, n: u32) {
            self.bits.extend((0..n).map(|i| v >> i & 1 == 1));
        }
        fn vbr(&mut self, mut v: u64, n: u32) {
            let hi = 1u64 << (n - 1);
            while v >= hi {
                self.fixed(v & (hi - 1) | hi, n);
                v >>= n - 1;
            }
            self.fixed(v, n);
        }
        fn align(&mut self) {
            while !self.bits.len().is_multiple_of(32) {
                self.bits.push(false);
            }
        }
        fn cur(&self) -> u32 {
            self.width.last().map_or(2, |w| w.0)
        }
        fn enter(&mut self, id: u64) -> &mut W {
            self.fixed(1, self.cur());
            self.vbr(id, 8);
            self.vbr(3, 4);
            self.align();
            let at = self.bits.len();
            self.fixed(0, 32);
            self.width.push((3, at));
            self
        }
        fn end(&mut self) -> &mut W {
            self.fixed(0, self.cur());
            self.align();
            let (_, at) = self.width.pop().unwrap();
            let words = ((self.bits.len() - at - 32) / 32) as u64;
            for i in 0..32 {
                self.bits[at + i] = words >> i & 1 == 1;
            }
            self
        }
        fn record(&mut self, code: u64, ops: &[u64]) -> &mut W {
            self.fixed(3, self.cur());
            self.vbr(code, 6);
            self.vbr(ops.len() as u64, 6);
            for &v in ops {
                self.vbr(v, 6);
            }
            self
        }
        fn bytes(&mut self) -> Vec<u8> {
            self.align();
            self.bits.chunks(8).map(|c| c.iter().rev().fold(0u8, |a, &b| a << 1 | u8::from(b))).collect()
        }
    }

    /// A module of one block `id` holding `records`, then a triple and padding.
    fn module(id: u64, records: &[(u64, &[u64])]) -> Vec<u8> {
        let mut w = W::new();
        w.enter(MODULE_BLOCK).enter(id);
        for (code, ops) in records {
            w.record(*code, ops);
        }
        w.end();
        let t: Vec<u64> = b"amdgcn-amd-amdhsa".iter().map(|&c| u64::from(c)).collect();
        w.record(MODULE_CODE_TRIPLE, &t).end();
        let mut v = w.bytes();
        v.extend([0; 8]);
        v
    }

    fn rejected(bc: &[u8], what: &str) {
        let e = check(bc).expect_err("accepted");
        assert!(e.contains(what), "{e}");
    }

    #[test]
    fn check_rejects_counts_llvm_would_allocate_by() {
        // (the hand-built modules are well-formed containers: the triple reader accepts each)
        let huge = 1u64 << 40;
        let ok = module(TYPE_BLOCK, &[(TYPE_CODE_NUMENTRY, &[1]), (7, &[32])]);
        assert_eq!(triple(&ok).as_deref(), Ok("amdgcn-amd-amdhsa"));
        assert_eq!(check(&ok), Ok(()));
        rejected(&module(TYPE_BLOCK, &[(TYPE_CODE_NUMENTRY, &[huge]), (7, &[32])]), "type table entries");
        rejected(&module(TYPE_BLOCK, &[(TYPE_CODE_NUMENTRY, &[3]), (7, &[32])]), "type table entries");

        for idx in [0, 1, 2, 0xffff_ffff, 0x1_ffff_ffff] {
            let m = module(PARAMATTR_GROUP_BLOCK, &[(PARAMATTR_GRP_CODE_ENTRY, &[1, idx, 0, 18])]);
            assert_eq!(check(&m), Ok(()), "index {idx:#x}");
        }
        // the fuzz input's index: 0x2_7fff_ffff, as 32 bits 2^31 - 1 (16 GiB of attribute sets)
        for idx in [0x7fff_ffff, 0x2_7fff_ffff, 1 << 20] {
            let m = module(PARAMATTR_GROUP_BLOCK, &[(PARAMATTR_GRP_CODE_ENTRY, &[1, idx, 0, 18])]);
            rejected(&m, "parameter index");
        }

        let ret: &[u64] = &[];
        assert_eq!(check(&module(FUNCTION_BLOCK, &[(FUNC_CODE_DECLAREBLOCKS, &[1]), (10, ret)])), Ok(()));
        rejected(&module(FUNCTION_BLOCK, &[(FUNC_CODE_DECLAREBLOCKS, &[huge]), (10, ret)]), "basic blocks");

        assert_eq!(check(&module(METADATA_BLOCK, &[(METADATA_STRINGS, &[2, 2])])), Ok(()));
        rejected(&module(METADATA_BLOCK, &[(METADATA_STRINGS, &[1 << 31, 8])]), "metadata string count");
        rejected(&module(METADATA_BLOCK, &[(METADATA_STRINGS, &[1, huge])]), "string table offset");

        let magic = SWITCH_INST_MAGIC << 16;
        let f = |code, ops: &[u64]| module(FUNCTION_BLOCK, &[(FUNC_CODE_DECLAREBLOCKS, &[1]), (code, ops)]);
        assert_eq!(check(&f(FUNC_CODE_INST_SWITCH, &[magic, 0, 0, 0, 0])), Ok(()));
        assert_eq!(check(&f(FUNC_CODE_INST_SWITCH, &[0, 0, 0, huge])), Ok(()), "new format: counted by LLVM");
        rejected(&f(FUNC_CODE_INST_SWITCH, &[magic, 0, 0, 0, huge]), "switch case count");
        rejected(&f(FUNC_CODE_INST_LANDINGPAD, &[0, 0, huge]), "landingpad clause count");
        rejected(&f(FUNC_CODE_INST_CATCHSWITCH, &[0, huge]), "catchswitch handler count");
    }

    /// A module with an attribute group block (`groups`: (group id, parameter index)) and an attribute
    /// list block of `lists` lists, each of the group ids `list`.
    fn attributes(groups: &[(u64, u64)], lists: usize, list: &[u64]) -> Vec<u8> {
        let mut w = W::new();
        w.enter(MODULE_BLOCK).enter(PARAMATTR_GROUP_BLOCK);
        for &(g, idx) in groups {
            w.record(PARAMATTR_GRP_CODE_ENTRY, &[g, idx, 0, 18]);
        }
        w.end().enter(PARAMATTR_BLOCK);
        for _ in 0..lists {
            w.record(PARAMATTR_CODE_ENTRY, list);
        }
        w.end();
        let t: Vec<u64> = b"amdgcn-amd-amdhsa".iter().map(|&c| u64::from(c)).collect();
        w.record(MODULE_CODE_TRIPLE, &t).end();
        let mut v = w.bytes();
        v.extend([0; 8]);
        v
    }

    #[test]
    fn check_bounds_the_attribute_sets_of_the_whole_module() {
        // many groups, each index within the input, together its square: 2000 x 50000 sets
        let many: Vec<(u64, u64)> = (1..=2000).map(|g| (g, 50_000)).collect();
        let m = attributes(&many, 0, &[]);
        assert!(m.len() * 8 > 50_000, "each index alone is accepted");
        rejected(&m, "attribute sets in all");
        let small: Vec<(u64, u64)> = (1..=2000).map(|g| (g, 5)).collect();
        assert_eq!(check(&attributes(&small, 0, &[])), Ok(()));
        // one group of a large index, used by many lists (each list as many sets as its largest group)
        let mut groups = vec![(1, 3), (2, 20_000)];
        groups.extend((3..=4000).map(|g| (g, 0)));
        assert_eq!(check(&attributes(&groups, 3000, &[1, 3])), Ok(()));
        rejected(&attributes(&groups, 3000, &[1, 2]), "attribute sets in all");
    }

    #[test]
    fn check_rejects_the_old_landingpad_clause_count() {
        let f = |ops: &[u64]| {
            module(FUNCTION_BLOCK, &[(FUNC_CODE_DECLAREBLOCKS, &[1]), (FUNC_CODE_INST_LANDINGPAD_OLD, ops)])
        };
        // [ty, persfn, cleanup, clauses, (kind, value)...], and with the persfn's type after it
        assert_eq!(check(&f(&[0, 1, 0, 1, 0, 5])), Ok(()));
        assert_eq!(check(&f(&[0, 9, 7, 0, 1, 0, 5])), Ok(()));
        rejected(&f(&[0, 1, 0, 1 << 40]), "landingpad clause count");
        rejected(&f(&[0, 9, 7, 0, 1 << 31]), "landingpad clause count");
    }

    /// What [`check`] costs on every load (cache hits included), per KiB of bitcode, on bench.c's and the
    /// classic-kernel suite's nvptx64 bitcode (compiled here with clang-22, as bench/build.sh does),
    /// against blake3 of the same bytes (the cache key a hit computes anyway) in the same run; best of
    /// 200. `cargo test --release --lib -- --ignored --nocapture bitcode_check_cost`
    #[test]
    #[ignore]
    fn bitcode_check_cost() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let dir = std::env::temp_dir().join(format!("offload-rs-check-cost-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        for name in ["bench", "suite"] {
            let out = dir.join(format!("{name}.nvptx64.bc"));
            let st = std::process::Command::new("clang-22")
                .args(["--target=nvptx64-nvidia-cuda", "-march=sm_90", "--cuda-feature=+ptx80", "-nogpulib"])
                .args(["-ffreestanding", "-flto", "-O2", "-c"])
                .arg(root.join(format!("bench/kernels/{name}.c")))
                .arg("-o")
                .arg(&out)
                .status()
                .expect("clang-22");
            assert!(st.success());
            let bc = std::fs::read(&out).expect("bitcode");
            let best = |f: &dyn Fn()| {
                (0..200)
                    .map(|_| {
                        let t = std::time::Instant::now();
                        f();
                        t.elapsed().as_nanos() as f64
                    })
                    .fold(f64::MAX, f64::min)
            };
            let c = best(&|| assert_eq!(check(std::hint::black_box(&bc)), Ok(())));
            let h = best(&|| {
                std::hint::black_box(blake3::hash(std::hint::black_box(&bc)));
            });
            let kib = bc.len() as f64 / 1024.0;
            println!(
                "{name}.nvptx64.bc ({kib:.1} KiB): check {:.0} ns ({:.0} ns/KiB), blake3 {:.0} ns ({:.0} ns/KiB): \
                 check/blake3 {:.1}",
                c,
                c / kib,
                h,
                h / kib,
                c / h
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn check_accepts_the_seeds_and_rejects_the_fuzz_input() {
        let seeds: [&[u8]; 6] = [
            include_bytes!("../../fuzz/seeds/kernels.nvptx64.bc"),
            include_bytes!("../../fuzz/seeds/kernels.amdgcn.bc"),
            include_bytes!("../../fuzz/seeds/lanes.nvptx64.bc"),
            include_bytes!("../../fuzz/seeds/lanes.amdgcn.bc"),
            include_bytes!("../../fuzz/seeds/seed_a.nvptx64.bc"),
            include_bytes!("../../fuzz/seeds/seed_b.amdgcn.bc"),
        ];
        for s in seeds {
            assert_eq!(check(s), Ok(()));
        }
        // fuzz/regressions/program/attr-group-index-oom-a1ef11f5: lanes.amdgcn.bc, byte 1088 ^ 0xa0 (an
        // attribute group's index becomes 0x2_7fff_ffff: LLVM's reader mallocs 16 GiB)
        let mut m = seeds[3].to_vec();
        m[1088] ^= 0xa0;
        rejected(&m, "parameter index 2147483647");
        // the group precedes the triple record: olIsValidBinary's reader already meets (and rejects) it
        assert!(triple(&m).is_err_and(|e| e.contains("parameter index")));
    }
}
