//! Saving and loading a matrix-product state.
//!
//! The file format (version 1), all integers little-endian:
//!
//! | bytes | content |
//! |---|---|
//! | 8 | the magic `BCMPS01\n` |
//! | 8 | `h`, the header's length in bytes (u64) |
//! | `h` | the header: UTF-8 JSON, below |
//! | 8 `n` | the values (f64), block after block, each block row-major |
//!
//! The header: `{"format": "blockcontract-mps", "version": 1, "symmetry": ["U1", "Z2", ...],
//! "sites": [{"legs": [LEG, LEG, LEG], "blocks": [[i, j, k], ...]}, ...], "values": n,
//! "checksum": "<FNV-1a 64 of the value bytes, 16 hex digits>"}`, each `LEG` `{"flow": "in"
//! or "out", "kind": "block" or "local", "sectors": [[[charge...], dim], ...]}` and each
//! block key the sector of each leg. A site is `[left In, physical In, right Out]` with
//! charge zero. A file that is not one of these, is truncated, or whose values do not match
//! the checksum is an [`Error::StateFile`], never a panic or a silently wrong state.

use super::state::Mps;
use crate::{ChargeKind, DynTensor, Error, Flow, Leg, Result, Space, SpaceKind, Symmetry, Tensor};
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::sync::Arc;

const MAGIC: &[u8; 8] = b"BCMPS01\n";
const FORMAT: &str = "blockcontract-mps";

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Header {
    format: String,
    version: u32,
    symmetry: Vec<String>,
    sites: Vec<SiteHeader>,
    values: u64,
    checksum: String,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SiteHeader {
    legs: Vec<LegHeader>,
    blocks: Vec<Vec<usize>>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct LegHeader {
    flow: String,
    kind: String,
    sectors: Vec<(Vec<i64>, usize)>,
}

/// FNV-1a, 64 bits.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

fn kind_name(k: &ChargeKind) -> String {
    match k {
        ChargeKind::U1 => "U1".into(),
        ChargeKind::Zn(n) => format!("Z{n}"),
    }
}

fn leg_header(l: &Leg) -> LegHeader {
    LegHeader {
        flow: if l.flow == Flow::In { "in" } else { "out" }.into(),
        kind: if l.space.kind() == SpaceKind::Local {
            "local"
        } else {
            "block"
        }
        .into(),
        sectors: l
            .space
            .sectors()
            .iter()
            .map(|s| (s.charge.values().to_vec(), s.dim))
            .collect(),
    }
}

impl Mps {
    /// The state in the format above.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let sym = self.tensors.first().map(|t| t.symmetry().clone());
        let kinds = sym.map_or_else(Vec::new, |s| s.kinds().iter().map(kind_name).collect());
        let mut values: Vec<u8> = Vec::new();
        let mut sites = Vec::with_capacity(self.len());
        for t in &self.tensors {
            let mut blocks = Vec::with_capacity(t.num_blocks());
            for b in t.blocks() {
                let key: Vec<usize> = b.key.iter().map(|&k| k as usize).collect();
                let a = t.block_array(&key).ok_or_else(|| Error::StateFile {
                    path: String::new(),
                    reason: format!("block {key:?} vanished while saving"),
                })?;
                for x in a.iter() {
                    values.extend_from_slice(&x.to_le_bytes());
                }
                blocks.push(key);
            }
            sites.push(SiteHeader {
                legs: t.legs().iter().map(leg_header).collect(),
                blocks,
            });
        }
        let header = Header {
            format: FORMAT.into(),
            version: 1,
            symmetry: kinds,
            sites,
            values: (values.len() / 8) as u64,
            checksum: format!("{:016x}", fnv1a(&values)),
        };
        let json = serde_json::to_vec(&header).map_err(|e| Error::StateFile {
            path: String::new(),
            reason: e.to_string(),
        })?;
        let mut out = Vec::with_capacity(16 + json.len() + values.len());
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&(json.len() as u64).to_le_bytes());
        out.extend_from_slice(&json);
        out.extend_from_slice(&values);
        Ok(out)
    }

    /// Writes the state to `path`.
    pub fn save(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        let bytes = self.to_bytes()?;
        std::fs::write(path, bytes).map_err(|e| Error::Io {
            path: path.display().to_string(),
            reason: e.to_string(),
        })
    }

    /// Reads a state written by [`Mps::save`].
    pub fn load(path: impl AsRef<Path>) -> Result<Mps> {
        let path = path.as_ref();
        let bytes = std::fs::read(path).map_err(|e| Error::Io {
            path: path.display().to_string(),
            reason: e.to_string(),
        })?;
        Mps::from_bytes(&bytes).map_err(|e| match e {
            Error::StateFile { reason, .. } => Error::StateFile {
                path: path.display().to_string(),
                reason,
            },
            other => other,
        })
    }

    /// A state from the bytes of [`Mps::to_bytes`].
    pub fn from_bytes(bytes: &[u8]) -> Result<Mps> {
        let bad = |reason: String| Error::StateFile {
            path: String::new(),
            reason,
        };
        if bytes.len() < 16 || &bytes[..8] != MAGIC {
            return Err(bad(
                "not a blockcontract MPS file (its first 8 bytes are not `BCMPS01\\n`)".into(),
            ));
        }
        let mut len = [0u8; 8];
        len.copy_from_slice(&bytes[8..16]);
        let h = u64::from_le_bytes(len);
        let end = 16u64
            .checked_add(h)
            .filter(|&e| e <= bytes.len() as u64)
            .ok_or_else(|| {
                bad(format!(
                    "truncated: a header of {h} bytes, {} bytes after the length",
                    bytes.len() - 16
                ))
            })? as usize;
        let header: Header =
            serde_json::from_slice(&bytes[16..end]).map_err(|e| bad(format!("header: {e}")))?;
        if header.format != FORMAT || header.version != 1 {
            return Err(bad(format!(
                "format `{}` version {}; this build reads `{FORMAT}` version 1",
                header.format, header.version
            )));
        }
        let values = &bytes[end..];
        if values.len() as u64 != header.values.saturating_mul(8) {
            return Err(bad(format!(
                "truncated or padded: {} value bytes, the header promises {} values",
                values.len(),
                header.values
            )));
        }
        if format!("{:016x}", fnv1a(values)) != header.checksum {
            return Err(bad(
                "the values do not match the header's checksum (a corrupted file)".into(),
            ));
        }
        let sym = symmetry(&header.symmetry).map_err(|e| bad(e.to_string()))?;
        let mut at = 0usize;
        let mut tensors = Vec::with_capacity(header.sites.len());
        for (i, site) in header.sites.iter().enumerate() {
            let t = site_tensor(&sym, site, values, &mut at)
                .map_err(|e| bad(format!("site {i}: {e}")))?;
            tensors.push(t);
        }
        if at != values.len() {
            return Err(bad(format!(
                "{} value bytes not used by any block",
                values.len() - at
            )));
        }
        if tensors.is_empty() {
            return Err(bad("no sites".into()));
        }
        Ok(Mps { tensors })
    }
}

/// The symmetry named by the header.
fn symmetry(kinds: &[String]) -> Result<Symmetry> {
    let kinds = kinds
        .iter()
        .map(|k| match k.as_str() {
            "U1" => Ok(ChargeKind::U1),
            z => z
                .strip_prefix('Z')
                .and_then(|n| n.parse::<u32>().ok())
                .map(ChargeKind::Zn)
                .ok_or_else(|| Error::InvalidSymmetry {
                    reason: format!("unknown charge kind `{k}`"),
                }),
        })
        .collect::<Result<Vec<_>>>()?;
    Symmetry::new(kinds)
}

/// One site's tensor, its values read from `values[*at..]`.
fn site_tensor(
    sym: &Symmetry,
    site: &SiteHeader,
    values: &[u8],
    at: &mut usize,
) -> Result<Tensor<f64, 3>> {
    let want = [("in", "block"), ("in", "local"), ("out", "block")];
    if site.legs.len() != 3 {
        return Err(Error::InvalidLegs {
            reason: format!("{} legs; a site has 3", site.legs.len()),
        });
    }
    let mut legs = Vec::with_capacity(3);
    for (k, (l, (flow, kind))) in site.legs.iter().zip(want).enumerate() {
        if l.flow != flow || l.kind != kind {
            return Err(Error::InvalidLegs {
                reason: format!(
                    "leg {k} is `{} {}`, a site's is `{flow} {kind}`",
                    l.flow, l.kind
                ),
            });
        }
        let space = Space::new(
            sym,
            &l.sectors,
            if kind == "local" {
                SpaceKind::Local
            } else {
                SpaceKind::Block
            },
        )?;
        let space = Arc::new(space);
        legs.push(if flow == "in" {
            Leg::inc(&space)
        } else {
            Leg::out(&space)
        });
    }
    let mut t = DynTensor::<f64>::zeros_with_blocks(legs, sym.zero(), &site.blocks)?;
    for key in &site.blocks {
        let k: Vec<u32> = key.iter().map(|&x| x as u32).collect();
        let b = t.find_block(&k).ok_or_else(|| Error::InvalidLegs {
            reason: format!("block {key:?} is not allowed"),
        })?;
        let layout = t.blocks()[b].layout.clone();
        let n: usize = layout.dims.iter().product();
        let bytes = values
            .get(*at..*at + 8 * n)
            .ok_or_else(|| Error::InvalidLegs {
                reason: format!("block {key:?} needs {n} values past the end"),
            })?;
        *at += 8 * n;
        let data = t.data_mut();
        let dims: Vec<usize> = layout.dims.to_vec();
        for (r, chunk) in bytes.chunks_exact(8).enumerate() {
            // the row-major index r as a position in the block's own layout
            let (mut rest, mut addr) = (r, layout.offset as isize);
            for ax in (0..dims.len()).rev() {
                addr += (rest % dims[ax]) as isize * layout.strides[ax];
                rest /= dims[ax];
            }
            let mut v = [0u8; 8];
            v.copy_from_slice(chunk);
            data[addr as usize] = f64::from_le_bytes(v);
        }
    }
    Tensor::try_from(t)
}
