//! Layering: within every crate of the workspace, the top-level modules
//! form a graph without circles (`config` may not use `load` while `load`
//! uses `config`). Cargo already refuses circles between crates; this test
//! refuses them between the modules of one crate, which the compiler allows.
//!
//! An edge A -> B is any `crate::B` path written in a file of module A
//! (`src/A.rs` or `src/A/**`). `lib.rs` only declares and re-exports, so it
//! is not a module of its own here.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

type Graph = BTreeMap<String, BTreeSet<String>>;

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The first segment of every `crate::…` path in `text`, `crate::{a, b::c}` included.
fn crate_paths(text: &str) -> BTreeSet<String> {
    let ident = |s: &str| s.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect::<String>();
    let mut out = BTreeSet::new();
    for line in text.lines() {
        let code = line.split("//").next().unwrap_or("");
        for (i, _) in code.match_indices("crate::") {
            let rest = &code[i + "crate::".len()..];
            if let Some(group) = rest.strip_prefix('{') {
                let inner = group.split('}').next().unwrap_or("");
                out.extend(inner.split(',').map(|p| ident(p.trim())).filter(|s| !s.is_empty()));
            } else {
                out.insert(ident(rest));
            }
        }
    }
    out.retain(|s| !s.is_empty());
    out
}

fn module_graph(src: &Path) -> Graph {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut graph = Graph::new();
    for file in files {
        let rel = file.strip_prefix(src).unwrap();
        let first = rel.components().next().unwrap().as_os_str().to_string_lossy().into_owned();
        if first == "lib.rs" || first == "main.rs" {
            continue;
        }
        let module = first.trim_end_matches(".rs").to_string();
        let uses = crate_paths(&fs::read_to_string(&file).unwrap());
        let edges = graph.entry(module.clone()).or_default();
        edges.extend(uses.into_iter().filter(|m| *m != module));
    }
    graph
}

/// One circle of the graph, as the path that closes it, or `None`.
fn find_circle(graph: &Graph) -> Option<Vec<String>> {
    fn visit(n: &str, g: &Graph, path: &mut Vec<String>, done: &mut BTreeSet<String>) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|p| p == n) {
            let mut circle = path[at..].to_vec();
            circle.push(n.to_string());
            return Some(circle);
        }
        if done.contains(n) {
            return None;
        }
        path.push(n.to_string());
        for next in g.get(n).into_iter().flatten() {
            if let Some(c) = visit(next, g, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(n.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph.keys().find_map(|n| visit(n, graph, &mut Vec::new(), &mut done))
}

fn workspace_crates() -> Vec<PathBuf> {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut out: Vec<PathBuf> =
        fs::read_dir(crates).unwrap().map(|e| e.unwrap().path().join("src")).filter(|p| p.is_dir()).collect();
    out.sort();
    out
}

#[test]
fn no_crate_has_a_circle_between_its_modules() {
    let crates = workspace_crates();
    assert!(crates.len() >= 4, "expected the workspace's crates beside this one, found {crates:?}");
    for src in crates {
        let graph = module_graph(&src);
        if let Some(circle) = find_circle(&graph) {
            panic!("{}: modules in a circle: {}", src.display(), circle.join(" -> "));
        }
    }
}

#[test]
fn the_check_finds_a_planted_circle() {
    let g: Graph = [("config", vec!["error"]), ("load", vec!["config", "result"]), ("result", vec!["load"])]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.into_iter().map(String::from).collect()))
        .collect();
    assert_eq!(find_circle(&g), Some(vec!["load".into(), "result".into(), "load".into()]));
}

#[test]
fn crate_paths_reads_groups_and_skips_comments() {
    let text =
        "use crate::{config::LoadConfig, error};\n// crate::load is only mentioned\nlet x = crate::measure::f();";
    let got: Vec<String> = crate_paths(text).into_iter().collect();
    assert_eq!(got, ["config", "error", "measure"]);
}
