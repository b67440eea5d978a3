//! Reads the documentation of every scheme's parameters from the sources, so that `aqmlab list aqm
//! NAME` prints what the code says and nothing is written twice: each `*Params` struct's fields
//! with their `///` comments and serde attributes (default, rename, alias, the `secs` time reader),
//! the fields the CHOKe family's `family_params!` macro adds (RED's and the victim handling), the
//! `pub enum`s with their variants (the values a field takes), and each file's "Reference:"
//! paragraph. The result is `$OUT_DIR/param_docs.rs`, included by `src/describe.rs`, whose tests
//! check it against what serde actually reads and writes.

use std::fmt::Write as _;
use std::fs;
use std::path::Path;

#[derive(Debug, Clone, Default)]
struct Field {
    name: String,
    alias: Vec<String>,
    doc: String,
    ty: String,
    default: bool,
    secs: bool,
}

#[derive(Debug, Default)]
struct Struct {
    name: String,
    file: String,
    fields: Vec<Field>,
    /// `family_params!` adds RED's fields (`red`) and the victim fields (all of the family).
    red: bool,
    family: bool,
}

fn doc_text(lines: &[String]) -> String {
    lines.iter().map(|l| l.trim()).collect::<Vec<_>>().join(" ").trim().to_string()
}

fn attr_value(attr: &str, key: &str) -> Option<String> {
    // `key = "value"` inside #[serde(...)]
    let i = attr.find(&format!("{key} = \""))?;
    let rest = &attr[i + key.len() + 4..];
    Some(rest[..rest.find('"')?].to_string())
}

/// The fields of a struct body (the lines between its braces).
fn fields(body: &[&str]) -> Vec<Field> {
    let mut out = Vec::new();
    let mut doc: Vec<String> = Vec::new();
    let mut attrs = String::new();
    let mut open = 0i32; // brackets of an attribute spread over several lines (as rustfmt writes long ones)
    for raw in body {
        let l = raw.trim();
        if open > 0 || l.starts_with("#[") {
            attrs.push_str(l);
            open += l.matches('[').count() as i32 - l.matches(']').count() as i32;
            continue;
        }
        if let Some(d) = l.strip_prefix("///") {
            doc.push(d.trim().to_string());
        } else if let Some(rest) = l.strip_prefix("pub ") {
            if let Some((name, ty)) = rest.split_once(':') {
                let name = name.trim();
                if name.starts_with('$') {
                    doc.clear();
                    attrs.clear();
                    continue;
                }
                let serde_name = attr_value(&attrs, "rename").unwrap_or_else(|| name.to_string());
                let alias = attr_value(&attrs, "alias").into_iter().collect();
                out.push(Field {
                    name: serde_name,
                    alias,
                    doc: doc_text(&doc),
                    ty: ty.trim().trim_end_matches(',').trim().to_string(),
                    default: attrs.contains("default"),
                    secs: attrs.contains("units::secs")
                        || attrs.contains("units::opt_secs")
                        || attrs.contains("\"secs\""),
                });
            }
            doc.clear();
            attrs.clear();
        } else if !l.is_empty() && !l.starts_with("//") {
            doc.clear();
            attrs.clear();
        }
    }
    out
}

/// Lines from `start` (the line holding the opening brace) to its matching closing brace.
fn braced<'a>(lines: &[&'a str], start: usize) -> (Vec<&'a str>, usize) {
    let mut depth = 0i32;
    let mut body = Vec::new();
    for (k, l) in lines.iter().enumerate().skip(start) {
        let code = l.split("//").next().unwrap_or("");
        for ch in code.chars() {
            match ch {
                '{' => depth += 1,
                '}' => depth -= 1,
                _ => {}
            }
        }
        if k > start {
            if depth <= 0 {
                return (body, k);
            }
            body.push(*l);
        }
    }
    (body, lines.len())
}

fn reference(text: &str) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut on = false;
    for l in text.lines() {
        let Some(d) = l.trim().strip_prefix("//!") else {
            if !l.trim().is_empty() {
                break;
            }
            continue;
        };
        let d = d.trim();
        if let Some(r) = d.strip_prefix("Reference:").or_else(|| d.strip_prefix("References:")) {
            on = true;
            out.push(r.trim().to_string());
        } else if on {
            if d.is_empty() {
                break;
            }
            out.push(d.to_string());
        }
    }
    out.join(" ")
}

/// An enum of parameter values: its name, its comment, and each variant with its comment.
type EnumDoc = (String, String, Vec<(String, String)>);

fn enums(text: &str, out: &mut Vec<EnumDoc>) {
    let lines: Vec<&str> = text.lines().collect();
    for (i, l) in lines.iter().enumerate() {
        let t = l.trim();
        let Some(rest) = t.strip_prefix("pub enum ") else { continue };
        let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
        // serde's snake_case names need the attribute; enums without it are not parameter values
        let head = &lines[i.saturating_sub(4)..i];
        if !head.iter().any(|h| h.contains("rename_all = \"snake_case\"")) || !t.ends_with('{') {
            continue;
        }
        let mut doc = Vec::new();
        for h in lines[..i].iter().rev() {
            let h = h.trim();
            if let Some(d) = h.strip_prefix("///") {
                doc.insert(0, d.trim().to_string());
            } else if h.starts_with("#[") {
                continue;
            } else {
                break;
            }
        }
        let (body, _) = braced(&lines, i);
        let mut variants = Vec::new();
        let mut vdoc: Vec<String> = Vec::new();
        for b in body {
            let b = b.trim();
            if let Some(d) = b.strip_prefix("///") {
                vdoc.push(d.trim().to_string());
            } else if b.starts_with("#[") {
                continue;
            } else if let Some(c) = b.chars().next().filter(|c| c.is_ascii_uppercase()) {
                let _ = c;
                let v: String = b.chars().take_while(|c| c.is_alphanumeric()).collect();
                variants.push((snake(&v), doc_text(&vdoc)));
                vdoc.clear();
            }
        }
        out.push((name, doc_text(&doc), variants));
    }
}

fn snake(s: &str) -> String {
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

fn lit(s: &str) -> String {
    format!("{s:?}")
}

fn main() {
    let src = Path::new("src");
    println!("cargo:rerun-if-changed=src");
    let mut files: Vec<_> = fs::read_dir(src).unwrap().filter_map(|e| e.ok()).map(|e| e.path()).collect();
    files.sort();
    let mut structs: Vec<Struct> = Vec::new();
    let mut all_enums = Vec::new();
    let mut refs: Vec<(String, String)> = Vec::new();
    let mut family_red: Vec<Field> = Vec::new();
    let mut family_victim: Vec<Field> = Vec::new();
    // the shared field blocks of the other parameter macros (`pi_law_params!`, ...): a macro that
    // defines `pub struct $name { <its fields> $( ... )* }` puts those fields first
    let mut shared: Vec<(String, Vec<Field>)> = Vec::new();
    for path in files.iter().filter(|p| p.extension().and_then(|e| e.to_str()) == Some("rs")) {
        let text = fs::read_to_string(path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for (i, l) in lines.iter().enumerate() {
            let Some(rest) = l.trim().strip_prefix("macro_rules! ") else { continue };
            let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            if name == "family_params" {
                continue;
            }
            let (body, _) = braced(&lines, i);
            if let Some(k) = body.iter().position(|b| b.trim() == "pub struct $name {") {
                let (fields_body, _) = braced(&body, k);
                shared.push((name, fields(&fields_body)));
            }
        }
    }
    for path in files {
        if path.extension().and_then(|e| e.to_str()) != Some("rs") {
            continue;
        }
        let stem = path.file_stem().unwrap().to_str().unwrap().to_string();
        let text = fs::read_to_string(&path).unwrap();
        refs.push((stem.clone(), reference(&text)));
        enums(&text, &mut all_enums);
        let lines: Vec<&str> = text.lines().collect();
        if stem == "family" {
            // the macro's two added blocks: the victim fields of the @victim arm, RED's of the red arm
            for (i, l) in lines.iter().enumerate() {
                if l.contains("pub struct $name {") && l.trim_start().starts_with("pub struct") {
                    let (body, _) = braced(&lines, i);
                    family_victim = fields(&body);
                }
                if l.contains("family_params! { @victim") && l.contains("pub struct $name { $(") {
                    // the red arm's invocation: its extra fields follow on the next lines (the other
                    // arms' invocations are one line each)
                    let (body, _) = braced(&lines, i);
                    if !body.is_empty() {
                        family_red = fields(&body);
                    }
                }
            }
            continue;
        }
        for (i, l) in lines.iter().enumerate() {
            let t = l.trim();
            let Some(rest) = t.strip_prefix("pub struct ") else { continue };
            let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            if !name.ends_with("Params") || !(t.ends_with('{') || t.ends_with("{}")) {
                continue;
            }
            let (body, end) = if t.ends_with("{}") { (Vec::new(), i) } else { braced(&lines, i) };
            // the invocation of a parameter macro, above the struct's comments and the macro's own
            // arguments
            let opener = lines[..i].iter().rev().map(|p| p.trim()).find(|p| {
                !(p.starts_with("///") || p.starts_with("#[") || p.starts_with("defaults =") || p.is_empty())
            });
            let inside_family = opener == Some("family_params! {");
            let mut own = fields(&body);
            if let Some((_, block)) = shared.iter().find(|(m, _)| opener.is_some_and(|o| o == format!("{m}! {{"))) {
                own.splice(0..0, block.iter().cloned());
            }
            let after = lines.get(end).map(|l| l.trim().trim_start_matches('}').trim()).unwrap_or("");
            let next = lines.get(end + 1).map(|l| l.trim()).unwrap_or("");
            let red = inside_family && (after == "red" || next == "red");
            structs.push(Struct { name, file: stem.clone(), fields: own, red, family: inside_family });
        }
    }
    let mut out = String::new();
    writeln!(out, "// generated by build.rs from src/*.rs: do not edit").unwrap();
    writeln!(out, "pub(crate) static STRUCTS: &[RawStruct] = &[").unwrap();
    for s in &structs {
        let mut fs_: Vec<Field> = s.fields.clone();
        if s.red {
            fs_.extend(family_red.iter().cloned());
        }
        if s.family {
            fs_.extend(family_victim.iter().cloned());
        }
        let reference = refs.iter().find(|(f, _)| *f == s.file).map(|(_, r)| r.as_str()).unwrap_or("");
        writeln!(
            out,
            "    RawStruct {{ name: {}, file: {}, reference: {}, fields: &[",
            lit(&s.name),
            lit(&s.file),
            lit(reference)
        )
        .unwrap();
        for f in fs_ {
            writeln!(
                out,
                "        RawField {{ name: {}, alias: {}, doc: {}, ty: {}, default: {}, secs: {} }},",
                lit(&f.name),
                lit(&f.alias.join(",")),
                lit(&f.doc),
                lit(&f.ty),
                f.default,
                f.secs
            )
            .unwrap();
        }
        writeln!(out, "    ] }},").unwrap();
    }
    writeln!(out, "];").unwrap();
    writeln!(out, "pub(crate) static ENUMS: &[RawEnum] = &[").unwrap();
    for (name, doc, vs) in &all_enums {
        let vs: Vec<String> = vs.iter().map(|(v, d)| format!("({}, {})", lit(v), lit(d))).collect();
        writeln!(out, "    RawEnum {{ name: {}, doc: {}, variants: &[{}] }},", lit(name), lit(doc), vs.join(", "))
            .unwrap();
    }
    writeln!(out, "];").unwrap();
    let dest = Path::new(&std::env::var("OUT_DIR").unwrap()).join("param_docs.rs");
    fs::write(dest, out).unwrap();
}
