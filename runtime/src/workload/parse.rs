//! Field-by-field parsing of workload JSON, every error naming its field.

use super::{Expected, TensorDesc, Workload};
use crate::block::DynTensor;
use crate::error::{Error, Result};
use crate::scalar::DType;
use crate::spec::{ContractionSpec, Tree};
use crate::symmetry::{ChargeKind, Flow, Space, SpaceKind, Symmetry};
use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

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
    fn get<'v>(&self, v: &'v Value, parent: &str, key: &str) -> Result<&'v Value> {
        v.get(key)
            .ok_or_else(|| self.err(&join(parent, key), "missing"))
    }
    fn str<'v>(&self, v: &'v Value, field: &str) -> Result<&'v str> {
        v.as_str()
            .ok_or_else(|| self.err(field, "expected a string"))
    }
    fn arr<'v>(&self, v: &'v Value, field: &str) -> Result<&'v Vec<Value>> {
        v.as_array()
            .ok_or_else(|| self.err(field, "expected an array"))
    }
    fn obj<'v>(&self, v: &'v Value, field: &str) -> Result<&'v serde_json::Map<String, Value>> {
        v.as_object()
            .ok_or_else(|| self.err(field, "expected an object"))
    }
    fn int(&self, v: &Value, field: &str) -> Result<i64> {
        v.as_i64()
            .ok_or_else(|| self.err(field, "expected an integer"))
    }
    fn uint(&self, v: &Value, field: &str) -> Result<u64> {
        v.as_u64()
            .ok_or_else(|| self.err(field, "expected a non-negative integer"))
    }
}

fn join(parent: &str, key: &str) -> String {
    if parent.is_empty() {
        key.to_string()
    } else {
        format!("{parent}.{key}")
    }
}

pub(super) fn parse(text: &str, file: &str) -> Result<Workload> {
    let c = Ctx { file };
    let root: Value = serde_json::from_str(text).map_err(|e| c.err("(json)", e.to_string()))?;
    c.obj(&root, "(root)")?;
    let format = c.str(c.get(&root, "", "format")?, "format")?;
    if format != "blocksparse-workload/1" {
        return Err(c.err(
            "format",
            format!("expected \"blocksparse-workload/1\", found {format:?}"),
        ));
    }
    let name = c.str(c.get(&root, "", "name")?, "name")?.to_string();
    let source = match root.get("source") {
        Some(v) => c.str(v, "source")?.to_string(),
        None => String::new(),
    };
    let mut kinds = Vec::new();
    for (i, k) in c
        .arr(c.get(&root, "", "symmetry")?, "symmetry")?
        .iter()
        .enumerate()
    {
        let f = format!("symmetry[{i}]");
        let s = c.str(k, &f)?;
        kinds.push(match s {
            "U1" => ChargeKind::U1,
            _ => match s.strip_prefix('Z').and_then(|n| n.parse::<u32>().ok()) {
                Some(n) if n >= 1 => ChargeKind::Zn(n),
                _ => {
                    return Err(c.err(
                        &f,
                        format!("expected \"U1\" or \"Z<n>\" (n >= 1), found {s:?}"),
                    ))
                }
            },
        });
    }
    let symmetry = Symmetry::new(kinds).map_err(|e| c.err("symmetry", e.to_string()))?;
    let dtype = match c.str(c.get(&root, "", "dtype")?, "dtype")? {
        "f64" => DType::F64,
        "f32" => DType::F32,
        "c64" => DType::C64,
        d => return Err(c.err("dtype", format!("expected f64, f32 or c64, found {d:?}"))),
    };
    let spaces = parse_spaces(&c, &root, &symmetry)?;
    let tensors = parse_tensors(&c, &root, &symmetry, &spaces)?;
    let ctext = c.str(c.get(&root, "", "contraction")?, "contraction")?;
    let mut contraction =
        ContractionSpec::parse(ctext).map_err(|e| c.err("contraction", e.to_string()))?;
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
    if let Some(order) = root.get("order") {
        contraction.tree = Some(parse_order(&c, order, &contraction)?);
    }
    contraction
        .validate()
        .map_err(|e| c.err("contraction", e.to_string()))?;
    check_contraction_legs(&c, &contraction, &tensors)?;
    Ok(Workload {
        name,
        source,
        symmetry,
        dtype,
        spaces,
        tensors,
        contraction,
        contraction_text: ctext.to_string(),
    })
}

fn parse_spaces(c: &Ctx, root: &Value, symmetry: &Symmetry) -> Result<HashMap<String, Arc<Space>>> {
    let mut spaces = HashMap::new();
    for (sname, sv) in c.obj(c.get(root, "", "spaces")?, "spaces")? {
        let f = format!("spaces.{sname}");
        c.obj(sv, &f)?;
        let mut secs = Vec::new();
        for (i, s) in c
            .arr(c.get(sv, &f, "sectors")?, &format!("{f}.sectors"))?
            .iter()
            .enumerate()
        {
            let sf = format!("{f}.sectors[{i}]");
            let q: Vec<i64> = c
                .arr(c.get(s, &sf, "charge")?, &format!("{sf}.charge"))?
                .iter()
                .map(|x| c.int(x, &format!("{sf}.charge")))
                .collect::<Result<_>>()?;
            if q.len() != symmetry.len() {
                return Err(c.err(
                    &format!("{sf}.charge"),
                    format!(
                        "has {} components, symmetry has {}",
                        q.len(),
                        symmetry.len()
                    ),
                ));
            }
            let dim = c.uint(c.get(s, &sf, "dim")?, &format!("{sf}.dim"))?;
            if dim == 0 {
                return Err(c.err(&format!("{sf}.dim"), "must be >= 1"));
            }
            secs.push((q, dim as usize));
        }
        let local = match sv.get("local") {
            None => false,
            Some(v) => v
                .as_bool()
                .ok_or_else(|| c.err(&format!("{f}.local"), "expected a boolean"))?,
        };
        let kind = if local {
            SpaceKind::Local
        } else {
            SpaceKind::Block
        };
        let space = Space::new(symmetry, &secs, kind)
            .map_err(|e| c.err(&format!("{f}.sectors"), e.to_string()))?;
        spaces.insert(sname.clone(), Arc::new(space));
    }
    Ok(spaces)
}

fn parse_tensors(
    c: &Ctx,
    root: &Value,
    symmetry: &Symmetry,
    spaces: &HashMap<String, Arc<Space>>,
) -> Result<Vec<TensorDesc>> {
    let mut tensors = Vec::new();
    for (tname, tv) in c.obj(c.get(root, "", "tensors")?, "tensors")? {
        let f = format!("tensors.{tname}");
        c.obj(tv, &f)?;
        let seed = c.uint(c.get(tv, &f, "seed")?, &format!("{f}.seed"))?;
        if seed >= 1u64 << 53 {
            return Err(c.err(&format!("{f}.seed"), "must be < 2^53"));
        }
        let q: Vec<i64> = c
            .arr(c.get(tv, &f, "charge")?, &format!("{f}.charge"))?
            .iter()
            .map(|x| c.int(x, &format!("{f}.charge")))
            .collect::<Result<_>>()?;
        let charge = symmetry
            .charge(&q)
            .map_err(|e| c.err(&format!("{f}.charge"), e.to_string()))?;
        let mut legs = Vec::new();
        for (i, l) in c
            .arr(c.get(tv, &f, "legs")?, &format!("{f}.legs"))?
            .iter()
            .enumerate()
        {
            let lf = format!("{f}.legs[{i}]");
            let sp = c.str(c.get(l, &lf, "space")?, &format!("{lf}.space"))?;
            if !spaces.contains_key(sp) {
                return Err(c.err(&format!("{lf}.space"), format!("unknown space `{sp}`")));
            }
            let flow = match c.str(c.get(l, &lf, "flow")?, &format!("{lf}.flow"))? {
                "out" => Flow::Out,
                "in" => Flow::In,
                x => {
                    return Err(c.err(
                        &format!("{lf}.flow"),
                        format!("expected \"out\" or \"in\", found {x:?}"),
                    ))
                }
            };
            legs.push((sp.to_string(), flow));
        }
        let blocks = match tv.get("blocks") {
            None => None,
            Some(bv) => {
                let mut bl = Vec::new();
                for (i, b) in c.arr(bv, &format!("{f}.blocks"))?.iter().enumerate() {
                    let bf = format!("{f}.blocks[{i}]");
                    let key: Vec<usize> = c
                        .arr(b, &bf)?
                        .iter()
                        .map(|x| c.uint(x, &bf).map(|v| v as usize))
                        .collect::<Result<_>>()?;
                    bl.push(key);
                }
                Some(bl)
            }
        };
        // validate blocks and charges now, naming the tensor
        let leg_objs: Vec<_> = legs
            .iter()
            .map(|(s, fl)| crate::symmetry::Leg::new(&spaces[s], *fl))
            .collect();
        let check = match &blocks {
            Some(b) => DynTensor::<f64>::validate_blocks(&leg_objs, &charge, b),
            None => Ok(()),
        };
        check.map_err(|e| c.err(&format!("{f}.blocks"), e.to_string()))?;
        tensors.push(TensorDesc {
            name: tname.clone(),
            seed,
            charge,
            legs,
            blocks,
        });
    }
    Ok(tensors)
}

fn parse_order(c: &Ctx, order: &Value, spec: &ContractionSpec) -> Result<Tree> {
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
    for (i, pair) in c.arr(order, "order")?.iter().enumerate() {
        let f = format!("order[{i}]");
        let p = c.arr(pair, &f)?;
        if p.len() != 2 {
            return Err(c.err(&f, "expected a pair of names"));
        }
        let x = c.str(&p[0], &f)?.to_string();
        let y = c.str(&p[1], &f)?.to_string();
        let mut take = |n: &str| -> Result<Tree> {
            let pos = live.iter().position(|(m, _)| m == n).ok_or_else(|| {
                c.err(
                    &f,
                    format!("`{n}` is not an operand or earlier intermediate still unused"),
                )
            })?;
            Ok(live.remove(pos).1)
        };
        let tx = take(&x)?;
        let ty = take(&y)?;
        live.push((format!("({x}*{y})"), Tree::Node(Box::new(tx), Box::new(ty))));
    }
    if live.len() != 1 {
        return Err(c.err(
            "order",
            format!(
                "leaves {} results; it must combine every operand into one",
                live.len()
            ),
        ));
    }
    Ok(live.pop().expect("one").1)
}

fn check_contraction_legs(c: &Ctx, spec: &ContractionSpec, tensors: &[TensorDesc]) -> Result<()> {
    let mut first: Vec<Option<(String, Flow)>> = vec![None; spec.labels.len()];
    for o in &spec.operands {
        let t = tensors
            .iter()
            .find(|t| t.name == o.name)
            .expect("checked above");
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
            let fl = if o.conj { fl.dual() } else { *fl };
            let lname = &spec.labels[ix.label];
            match &first[ix.label] {
                None => first[ix.label] = Some((sp.clone(), fl)),
                Some((s0, f0)) => {
                    if s0 != sp {
                        return Err(c.err(
                            "contraction",
                            format!("index `{lname}` joins space `{s0}` with space `{sp}`"),
                        ));
                    }
                    if *f0 == fl {
                        return Err(c.err(
                            "contraction",
                            format!(
                                "index `{lname}` joins two `{f0:?}` legs; flows must be opposite"
                            ),
                        ));
                    }
                }
            }
        }
    }
    Ok(())
}

pub(super) fn load_expected(path: &Path) -> Result<HashMap<String, Expected>> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| Error::Io {
        path: file.clone(),
        reason: e.to_string(),
    })?;
    let c = Ctx { file: &file };
    let root: Value = serde_json::from_str(&text).map_err(|e| c.err("(json)", e.to_string()))?;
    let mut out = HashMap::new();
    for (name, v) in c.obj(&root, "(root)")? {
        let num = |k: &str| -> Result<f64> {
            c.get(v, name, k)?
                .as_f64()
                .ok_or_else(|| c.err(&format!("{name}.{k}"), "expected a number"))
        };
        out.insert(
            name.clone(),
            Expected {
                norm: num("norm")?,
                checksum: num("checksum")?,
                tenpy_ms_1thread: v.get("tenpy_ms_1thread").and_then(Value::as_f64),
            },
        );
    }
    Ok(out)
}
