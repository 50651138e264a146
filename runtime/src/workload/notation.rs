//! The workload files' contraction notation: `Out[a,b] = A[a,k] * conj(B)[k,b]`.

use crate::error::{Error, Result};
use crate::scalar::Conj;
use crate::spec::{Assign, ContractionSpec, IndexSpec, OperandSpec};

impl ContractionSpec {
    /// Parses `Out[a,b] = A[a,k] * B[k,b]` (the workload notation; `conj(X)[..]` allowed).
    pub fn parse(text: &str) -> Result<Self> {
        let bad = |m: &str| Error::InvalidSpec {
            reason: format!("{m} in `{text}`"),
        };
        let (lhs, rhs) = text.split_once('=').ok_or_else(|| bad("missing `=`"))?;
        let (lhs, assign) = match lhs.trim_end().strip_suffix(':') {
            Some(l) => (l, Assign::New),
            None => match lhs.trim_end().strip_suffix('+') {
                Some(l) => (l, Assign::Accumulate),
                None => (lhs, Assign::Overwrite),
            },
        };
        let mut labels: Vec<String> = Vec::new();
        let mut intern = |s: &str| -> usize {
            match labels.iter().position(|l| l == s) {
                Some(i) => i,
                None => {
                    labels.push(s.to_string());
                    labels.len() - 1
                }
            }
        };
        let (out_name, out_ix) = parse_factor(lhs).ok_or_else(|| bad("malformed output"))?;
        let output = out_ix.iter().map(|s| idx(intern(s))).collect();
        let mut operands = Vec::new();
        for f in rhs.split('*') {
            let (name, ix) =
                parse_factor(f).ok_or_else(|| bad(&format!("malformed factor `{}`", f.trim())))?;
            let (name, conj) = match name.strip_prefix("conj(").and_then(|n| n.strip_suffix(')')) {
                Some(n) => (n.trim().to_string(), Conj::Yes),
                None => (name, Conj::No),
            };
            let indices = ix.iter().map(|s| idx(intern(s))).collect();
            operands.push(OperandSpec {
                name,
                conj,
                indices,
            });
        }
        for o in &operands {
            let o: &OperandSpec = o;
            if let Some((i, _)) = o
                .indices
                .iter()
                .enumerate()
                .find(|(i, a)| o.indices[i + 1..].iter().any(|b| b.label == a.label))
            {
                return Err(bad(&format!(
                    "index `{}` appears twice on `{}` (the workload format has no traces)",
                    labels[o.indices[i].label], o.name
                )));
            }
        }
        let spec = ContractionSpec {
            labels,
            output_name: out_name,
            output,
            operands,
            tree: None,
            assign,
        };
        spec.validate()?;
        Ok(spec)
    }
}

fn idx(label: usize) -> IndexSpec {
    IndexSpec {
        label,
        flow: None,
        local: false,
    }
}

fn is_ident(s: &str) -> bool {
    let mut c = s.chars();
    matches!(c.next(), Some(ch) if ch.is_ascii_alphabetic() || ch == '_')
        && c.all(|ch| ch.is_ascii_alphanumeric() || ch == '_')
}

/// `Name[a, b]` -> ("Name", ["a", "b"]).
fn parse_factor(s: &str) -> Option<(String, Vec<String>)> {
    let s = s.trim();
    let open = s.rfind('[')?;
    let inner = s[open + 1..].strip_suffix(']')?;
    let name = s[..open].trim().to_string();
    if name.is_empty() {
        return None;
    }
    let mut ix = Vec::new();
    if !inner.trim().is_empty() {
        for part in inner.split(',') {
            let p = part.trim();
            if !is_ident(p) {
                return None;
            }
            ix.push(p.to_string());
        }
    }
    Some((name, ix))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_workload_notation() {
        let s = ContractionSpec::parse("Y[a,b] = L[a,x] * conj(P)[x,b]").unwrap();
        assert_eq!(s.labels, vec!["a", "b", "x"]);
        assert_eq!(s.operands.len(), 2);
        assert_eq!(s.operands[1].conj, Conj::Yes);
        assert_eq!(s.operands[1].name, "P");
        assert_eq!(s.assign, Assign::Overwrite);
    }

    #[test]
    fn rejects_bad_structures() {
        for bad in [
            "C[a] = A[a,k] * B[k,k]",
            "C[a,k] = A[a,k] * B[k]",
            "C[a] = A[a,k]",
            "C[a,b] = A[a]",
            "C[a,a] = A[a]",
            "C[a] A[a]",
            "C[a] = A[a,k] * B[k] * D[k]",
            "C[a] = A[a,1k]",
        ] {
            assert!(
                matches!(ContractionSpec::parse(bad), Err(Error::InvalidSpec { .. })),
                "{bad}"
            );
        }
    }
}
