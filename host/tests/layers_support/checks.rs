//! The structure rules over an import graph: no file circle, no module circle, imports that point
//! to a lower layer, files short enough to read; each broken rule as one message naming the files.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::Graph;

/// Files that hold only tests are not held to the length limit.
const TEST_FILE_NAMES: [&str; 2] = ["tests.rs", "properties.rs"];

/// The groups of nodes that reach each other (strongly connected components of more than one
/// node), by Tarjan's algorithm; each group sorted, the groups sorted.
fn circles(adjacency: &[Vec<usize>]) -> Vec<Vec<usize>> {
    struct Walk<'a> {
        adjacency: &'a [Vec<usize>],
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        stack: Vec<usize>,
        on_stack: Vec<bool>,
        next: usize,
        found: Vec<Vec<usize>>,
    }
    impl Walk<'_> {
        fn visit(&mut self, v: usize) {
            self.index[v] = Some(self.next);
            self.low[v] = self.next;
            self.next += 1;
            self.stack.push(v);
            self.on_stack[v] = true;
            for &w in &self.adjacency[v] {
                match self.index[w] {
                    None => {
                        self.visit(w);
                        self.low[v] = self.low[v].min(self.low[w]);
                    }
                    Some(iw) if self.on_stack[w] => self.low[v] = self.low[v].min(iw),
                    Some(_) => {}
                }
            }
            if Some(self.low[v]) == self.index[v] {
                let mut group = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack[w] = false;
                    group.push(w);
                    if w == v {
                        break;
                    }
                }
                if group.len() > 1 {
                    group.sort();
                    self.found.push(group);
                }
            }
        }
    }
    let n = adjacency.len();
    let mut walk = Walk {
        adjacency,
        index: vec![None; n],
        low: vec![0; n],
        stack: Vec::new(),
        on_stack: vec![false; n],
        next: 0,
        found: Vec::new(),
    };
    for v in 0..n {
        if walk.index[v].is_none() {
            walk.visit(v);
        }
    }
    walk.found.sort();
    walk.found
}

/// The file circles, each as the paths of its files.
pub fn file_circles(g: &Graph) -> Vec<Vec<String>> {
    let adjacency: Vec<Vec<usize>> = g
        .imports
        .iter()
        .map(|m| m.keys().copied().collect())
        .collect();
    let mut out: Vec<Vec<String>> = circles(&adjacency)
        .into_iter()
        .map(|c| c.into_iter().map(|i| g.files[i].rel.clone()).collect())
        .collect();
    out.sort();
    out
}

/// An import of a file of another top-level module: (importing file, imported file, path).
type CrossImport<'a> = (usize, usize, &'a str);

/// The imports between top-level modules, by (importing module, imported module).
fn module_imports(g: &Graph) -> BTreeMap<(&str, &str), Vec<CrossImport<'_>>> {
    let mut out: BTreeMap<(&str, &str), Vec<CrossImport<'_>>> = BTreeMap::new();
    for (a, imports) in g.imports.iter().enumerate() {
        for (&b, via) in imports {
            if let (Some(ta), Some(tb)) = (g.files[a].unit(), g.files[b].unit())
                && ta != tb
            {
                out.entry((ta, tb)).or_default().push((a, b, via));
            }
        }
    }
    out
}

/// The module circles, each as the names of its top-level modules.
pub fn module_circles(g: &Graph) -> Vec<Vec<String>> {
    let names: Vec<&str> = g
        .files
        .iter()
        .filter_map(|f| f.unit())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let index: HashMap<&str, usize> = names.iter().enumerate().map(|(i, n)| (*n, i)).collect();
    let mut adjacency = vec![Vec::new(); names.len()];
    for (a, b) in module_imports(g).into_keys() {
        adjacency[index[a]].push(index[b]);
    }
    circles(&adjacency)
        .into_iter()
        .map(|c| c.into_iter().map(|i| names[i].to_string()).collect())
        .collect()
}

/// One message per file circle and per module circle, naming the imports that close it.
pub fn circle_failures(g: &Graph) -> Vec<String> {
    let mut out = Vec::new();
    for circle in file_circles(g) {
        let mut msg = format!(
            "file circle of {} files: {}",
            circle.len(),
            circle.join(", ")
        );
        for rel in &circle {
            let a = g.index(rel).expect("a file of the circle");
            for (&b, via) in &g.imports[a] {
                if circle.contains(&g.files[b].rel) {
                    msg += &format!("\n    {rel} imports {} ({via})", g.files[b].rel);
                }
            }
        }
        out.push(msg);
    }
    let imports = module_imports(g);
    for circle in module_circles(g) {
        let mut msg = format!(
            "module circle of {} modules: {}",
            circle.len(),
            circle.join(", ")
        );
        for ((ta, tb), edges) in &imports {
            if circle.iter().any(|m| m == ta) && circle.iter().any(|m| m == tb) {
                let (a, b, via) = edges[0];
                let (a, b) = (&g.files[a].rel, &g.files[b].rel);
                msg += &format!("\n    {ta} -> {tb}: {a} imports {b} ({via})");
                match edges.len() {
                    1 => {}
                    2 => msg += ", and 1 more import",
                    n => msg += &format!(", and {} more imports", n - 1),
                }
            }
        }
        out.push(msg);
    }
    out
}

/// One message per import that does not point to a strictly lower layer of `layers` (bottom
/// first), per top-level module in no layer, and per module in two layers. The crate root
/// (`lib.rs`, `main.rs`) may import anything.
pub fn layer_failures(g: &Graph, layers: &[&[&str]]) -> Vec<String> {
    let mut out = Vec::new();
    let mut layer_of: HashMap<&str, usize> = HashMap::new();
    for (n, layer) in layers.iter().enumerate() {
        for &name in *layer {
            if let Some(before) = layer_of.insert(name, n + 1) {
                out.push(format!(
                    "`{name}` is in LAYERS twice (layers {before} and {}): keep one",
                    n + 1
                ));
            }
        }
    }
    let tops: BTreeSet<&str> = g.files.iter().filter_map(|f| f.unit()).collect();
    for top in tops.iter().filter(|t| !layer_of.contains_key(*t)) {
        out.push(format!("module `{top}` is in no layer: add it to LAYERS"));
    }
    for ((ta, tb), edges) in module_imports(g) {
        let (Some(&la), Some(&lb)) = (layer_of.get(ta), layer_of.get(tb)) else {
            continue;
        };
        if lb < la {
            continue;
        }
        let rule = if la == lb {
            format!(
                "`{ta}` and `{tb}` share layer {la}, and modules of one layer may not import each \
                 other"
            )
        } else {
            format!(
                "`{ta}` (layer {la}) may import only from layers below it, and `{tb}` is in \
                 layer {lb}"
            )
        };
        for (a, b, via) in edges {
            out.push(format!(
                "{} imports {} ({via}): {rule}",
                g.files[a].rel, g.files[b].rel
            ));
        }
    }
    out
}

/// The files over `limit` lines before their tests, with their count; test-only files (named
/// `tests.rs` or `properties.rs`, or under a `tests/` folder) are not counted.
pub fn long_files(g: &Graph, limit: usize) -> Vec<(String, usize)> {
    let mut out: Vec<(String, usize)> = g
        .files
        .iter()
        .filter(|f| {
            let mut parts = f.rel.split('/').rev();
            let name = parts.next().unwrap_or_default();
            !TEST_FILE_NAMES.contains(&name) && !parts.any(|p| p == "tests")
        })
        .filter(|f| f.lines > limit)
        .map(|f| (f.rel.clone(), f.lines))
        .collect();
    out.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    out
}

/// One message per file over `limit` lines before its tests.
pub fn long_file_failures(g: &Graph, limit: usize) -> Vec<String> {
    long_files(g, limit)
        .into_iter()
        .map(|(rel, lines)| {
            format!(
                "{rel}: {lines} lines before its tests, over the {limit} allowed: move a part into \
                 a file of its own (a `#[cfg(test)] mod` and what follows it do not count)"
            )
        })
        .collect()
}
