//! Workload JSON through serde: the file's shape is the structs below (unknown fields
//! rejected), syntax errors are named by their path (`serde_path_to_error`), and the
//! semantic checks that follow name their field too.

use super::{Expected, TensorDesc, Workload};
use crate::block::DynTensor;
use crate::error::{Error, Result};
use crate::scalar::DType;
use crate::spec::{ContractionSpec, Tree};
use crate::symmetry::{check_contractible, ChargeKind, Flow, Leg, Space, SpaceKind, Symmetry};
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;

/// The whole file.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileJson {
    format: String,
    name: String,
    #[serde(default)]
    source: String,
    symmetry: Vec<KindJson>,
    dtype: DtypeJson,
    spaces: BTreeMap<String, SpaceJson>,
    tensors: BTreeMap<String, TensorJson>,
    contraction: String,
    order: Option<Vec<Vec<String>>>,
}

/// `"U1"` or `"Z<n>"`.
#[derive(Deserialize)]
#[serde(try_from = "String")]
struct KindJson(ChargeKind);

impl TryFrom<String> for KindJson {
    type Error = String;
    fn try_from(s: String) -> std::result::Result<Self, String> {
        match s.as_str() {
            "U1" => Ok(KindJson(ChargeKind::U1)),
            _ => match s.strip_prefix('Z').and_then(|n| n.parse::<u32>().ok()) {
                Some(n) if n >= 1 => Ok(KindJson(ChargeKind::Zn(n))),
                _ => Err(format!("expected \"U1\" or \"Z<n>\" (n >= 1), found {s:?}")),
            },
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "lowercase")]
enum DtypeJson {
    F64,
    F32,
    C64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SpaceJson {
    sectors: Vec<SectorJson>,
    #[serde(default)]
    local: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SectorJson {
    charge: Vec<i64>,
    dim: u64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TensorJson {
    seed: u64,
    charge: Vec<i64>,
    legs: Vec<LegJson>,
    blocks: Option<Vec<Vec<u64>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LegJson {
    space: String,
    flow: FlowJson,
}

#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "lowercase")]
enum FlowJson {
    Out,
    In,
}

struct Ctx<'a> {
    file: &'a str,
}

impl Ctx<'_> {
    fn err(&self, field: &str, reason: impl Into<String>) -> Error {
        Error::Workload {
            file: self.file.to_string(),
            field: field.to_string(),
            reason: reason.into(),
        }
    }

    /// Deserializes `text`, naming the field of a syntax error by its JSON path (a missing or
    /// unknown field is named itself, not its parent).
    fn deserialize<'de, X: Deserialize<'de>>(&self, text: &'de str) -> Result<X> {
        let de = &mut serde_json::Deserializer::from_str(text);
        serde_path_to_error::deserialize(de).map_err(|e| {
            let path = e.path().to_string();
            let path = if path == "." { String::new() } else { path };
            let inner = e.into_inner();
            let msg = inner.to_string();
            let named = ["missing field `", "unknown field `"]
                .iter()
                .find_map(|p| msg.strip_prefix(p))
                .and_then(|rest| rest.split('`').next());
            let field = match (named, path.is_empty()) {
                (Some(f), true) => f.to_string(),
                // an unknown field's path already ends with it; a missing one's is its parent
                (Some(f), false) if path == f || path.ends_with(&format!(".{f}")) => path,
                (Some(f), false) => format!("{path}.{f}"),
                (None, true) => "(json)".to_string(),
                (None, false) => path,
            };
            self.err(&field, msg)
        })
    }
}

pub(super) fn parse(text: &str, file: &str) -> Result<Workload> {
    let c = Ctx { file };
    let f: FileJson = c.deserialize(text)?;
    if f.format != "blocksparse-workload/1" {
        return Err(c.err(
            "format",
            format!("expected \"blocksparse-workload/1\", found {:?}", f.format),
        ));
    }
    let symmetry = Symmetry::new(f.symmetry.iter().map(|k| k.0).collect())
        .map_err(|e| c.err("symmetry", e.to_string()))?;
    let dtype = match f.dtype {
        DtypeJson::F64 => DType::F64,
        DtypeJson::F32 => DType::F32,
        DtypeJson::C64 => DType::C64,
    };
    let spaces = build_spaces(&c, &f.spaces, &symmetry)?;
    let tensors = f
        .tensors
        .iter()
        .map(|(name, t)| build_tensor(&c, name, t, &symmetry, &spaces))
        .collect::<Result<Vec<_>>>()?;
    let mut contraction =
        ContractionSpec::parse(&f.contraction).map_err(|e| c.err("contraction", e.to_string()))?;
    for o in &contraction.operands {
        if !tensors.iter().any(|t| t.name == o.name) {
            return Err(c.err(
                "contraction",
                format!("operand `{}` is not in `tensors`", o.name),
            ));
        }
    }
    if tensors.iter().any(|t| t.name == contraction.output_name) {
        return Err(c.err(
            "contraction",
            format!("output `{}` is also a tensor", contraction.output_name),
        ));
    }
    if let Some(order) = &f.order {
        contraction.tree = Some(parse_order(&c, order, &contraction)?);
    }
    contraction
        .validate()
        .map_err(|e| c.err("contraction", e.to_string()))?;
    check_contraction_legs(&c, &contraction, &tensors, &spaces)?;
    Ok(Workload {
        name: f.name,
        source: f.source,
        symmetry,
        dtype,
        spaces,
        tensors,
        contraction,
        contraction_text: f.contraction,
    })
}

fn build_spaces(
    c: &Ctx,
    spaces: &BTreeMap<String, SpaceJson>,
    symmetry: &Symmetry,
) -> Result<HashMap<String, Arc<Space>>> {
    let mut out = HashMap::new();
    for (sname, sv) in spaces {
        let f = format!("spaces.{sname}");
        let mut secs = Vec::new();
        for (i, s) in sv.sectors.iter().enumerate() {
            let sf = format!("{f}.sectors[{i}]");
            if s.charge.len() != symmetry.len() {
                return Err(c.err(
                    &format!("{sf}.charge"),
                    format!(
                        "has {} components, symmetry has {}",
                        s.charge.len(),
                        symmetry.len()
                    ),
                ));
            }
            let dim = usize::try_from(s.dim)
                .ok()
                .filter(|&d| d >= 1)
                .ok_or_else(|| c.err(&format!("{sf}.dim"), "must be >= 1 and fit in memory"))?;
            secs.push((s.charge.clone(), dim));
        }
        let kind = if sv.local {
            SpaceKind::Local
        } else {
            SpaceKind::Block
        };
        let space = Space::new(symmetry, &secs, kind)
            .map_err(|e| c.err(&format!("{f}.sectors"), e.to_string()))?;
        out.insert(sname.clone(), Arc::new(space));
    }
    Ok(out)
}

fn build_tensor(
    c: &Ctx,
    name: &str,
    t: &TensorJson,
    symmetry: &Symmetry,
    spaces: &HashMap<String, Arc<Space>>,
) -> Result<TensorDesc> {
    let f = format!("tensors.{name}");
    if t.seed >= 1u64 << 53 {
        return Err(c.err(&format!("{f}.seed"), "must be < 2^53"));
    }
    let charge = symmetry
        .charge(&t.charge)
        .map_err(|e| c.err(&format!("{f}.charge"), e.to_string()))?;
    let mut legs = Vec::new();
    for (i, l) in t.legs.iter().enumerate() {
        if !spaces.contains_key(&l.space) {
            return Err(c.err(
                &format!("{f}.legs[{i}].space"),
                format!("unknown space `{}`", l.space),
            ));
        }
        let flow = match l.flow {
            FlowJson::Out => Flow::Out,
            FlowJson::In => Flow::In,
        };
        legs.push((l.space.clone(), flow));
    }
    let blocks: Option<Vec<Vec<usize>>> = t.blocks.as_ref().map(|bs| {
        bs.iter()
            .map(|b| {
                b.iter()
                    .map(|&x| usize::try_from(x).unwrap_or(usize::MAX))
                    .collect()
            })
            .collect()
    });
    // validate blocks and charges now, naming the tensor
    if let Some(b) = &blocks {
        let leg_objs: Vec<Leg> = legs
            .iter()
            .map(|(s, fl)| Leg::new(&spaces[s], *fl))
            .collect();
        DynTensor::<f64>::validate_blocks(&leg_objs, &charge, b)
            .map_err(|e| c.err(&format!("{f}.blocks"), e.to_string()))?;
    }
    Ok(TensorDesc {
        name: name.to_string(),
        seed: t.seed,
        charge,
        legs,
        blocks,
    })
}

fn parse_order(c: &Ctx, order: &[Vec<String>], spec: &ContractionSpec) -> Result<Tree> {
    let names: Vec<&str> = spec.operands.iter().map(|o| o.name.as_str()).collect();
    let mut live: Vec<(String, Tree)> = Vec::new();
    for (i, n) in names.iter().enumerate() {
        if names[..i].contains(n) {
            return Err(c.err(
                "order",
                format!("operand `{n}` appears twice in the contraction, so `order` is ambiguous"),
            ));
        }
        live.push((n.to_string(), Tree::Leaf(i)));
    }
    for (i, pair) in order.iter().enumerate() {
        let f = format!("order[{i}]");
        let [x, y] = pair.as_slice() else {
            return Err(c.err(&f, "expected a pair of names"));
        };
        let mut take = |n: &str| -> Result<Tree> {
            let pos = live.iter().position(|(m, _)| m == n).ok_or_else(|| {
                c.err(
                    &f,
                    format!("`{n}` is not an operand or earlier intermediate still unused"),
                )
            })?;
            Ok(live.remove(pos).1)
        };
        let tx = take(x)?;
        let ty = take(y)?;
        live.push((format!("({x}*{y})"), Tree::Node(Box::new(tx), Box::new(ty))));
    }
    match live.pop() {
        Some((_, t)) if live.is_empty() => Ok(t),
        _ => Err(c.err(
            "order",
            format!(
                "leaves {} results; it must combine every operand into one",
                live.len() + 1
            ),
        )),
    }
}

/// Every contracted index joins the same space with opposite flows (the one rule,
/// [`check_contractible`]), named by the index.
fn check_contraction_legs(
    c: &Ctx,
    spec: &ContractionSpec,
    tensors: &[TensorDesc],
    spaces: &HashMap<String, Arc<Space>>,
) -> Result<()> {
    let mut first: Vec<Option<(&str, Leg)>> = vec![None; spec.labels.len()];
    for o in &spec.operands {
        let t = tensors.iter().find(|t| t.name == o.name).ok_or_else(|| {
            c.err(
                "contraction",
                format!("operand `{}` is not in `tensors`", o.name),
            )
        })?;
        if t.legs.len() != o.indices.len() {
            return Err(c.err(
                "contraction",
                format!(
                    "`{}` has {} legs but {} indices",
                    o.name,
                    t.legs.len(),
                    o.indices.len()
                ),
            ));
        }
        for (ix, (sp, fl)) in o.indices.iter().zip(&t.legs) {
            let leg = Leg::new(&spaces[sp], *fl).as_used(o.conj);
            let lname = &spec.labels[ix.label];
            match &first[ix.label] {
                None => first[ix.label] = Some((sp.as_str(), leg)),
                Some((s0, l0)) => check_contractible(
                    l0,
                    &leg,
                    || format!("index `{lname}` (space `{s0}` with space `{sp}`)"),
                    || "flows must be opposite".into(),
                )
                .map_err(|e| c.err("contraction", e.to_string()))?,
            }
        }
    }
    Ok(())
}

#[derive(Deserialize)]
struct ExpectedJson {
    norm: f64,
    checksum: f64,
    tenpy_ms_1thread: Option<f64>,
}

pub(super) fn load_expected(path: &Path) -> Result<HashMap<String, Expected>> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| Error::Io {
        path: file.clone(),
        reason: e.to_string(),
    })?;
    let c = Ctx { file: &file };
    let m: BTreeMap<String, ExpectedJson> = c.deserialize(&text)?;
    Ok(m.into_iter()
        .map(|(name, e)| {
            let x = Expected {
                norm: e.norm,
                checksum: e.checksum,
                tenpy_ms_1thread: e.tenpy_ms_1thread,
            };
            (name, x)
        })
        .collect())
}
