//! The crate's structure, read from its own `use` paths in `host/src`: no file imports a file that
//! imports it (even through others, even through a parent's `pub use`), no circle between the
//! modules of the layers, every import points to a lower layer of `LAYERS`, and no file is over 450 lines before
//! its tests. The checker itself is tested on small trees written to a temporary folder, so each
//! rule is seen to fail. The rules it reads imports by are in `layers_support/mod.rs`.

mod layers_support;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use layers_support::Graph;
use layers_support::checks::{
    circle_failures, file_circles, layer_failures, long_file_failures, long_files, module_circles,
};

/// The modules of `host/src` by layer, bottom first, each in the folder of its group (`GROUPS`).
/// A module imports only from the layers below its own; two modules of one layer may not import
/// each other. The crate root (`lib.rs`, `main.rs`) may import anything.
const LAYERS: &[&[&str]] = &[
    &[
        "base::text",
        "base::metrics",
        "base::protocol",
        "base::http_body",
    ],
    &["base::telemetry"],
    &["base::config"],
    &["base::model", "base::egress"],
    &["state::records"],
    &["state::store"],
    &["state::tasks"],
    &["work::tools"],
    &["work::context"],
    &["work::agents"],
    &["work::skills"],
    &["work::plugins"],
    &["work::mcp"],
    &["work::engine"],
    &["app::server", "app::push"],
    &["app::runtime"],
    &["app::operator", "app::scaffold"],
];

/// The folders of `host/src`, bottom first: each holds a run of consecutive layers, so the
/// layout shows the layers.
const GROUPS: &[&str] = &["base", "state", "work", "app"];

/// Lines a source file may hold before its tests: what a reader keeps in their head at once.
const MAX_LINES_BEFORE_TESTS: usize = 450;

/// The import graph of this crate's own source, read once for the three checks.
fn crate_graph() -> &'static Graph {
    static GRAPH: OnceLock<Graph> = OnceLock::new();
    GRAPH.get_or_init(|| {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let graph = Graph::load_grouped(&src, GROUPS);
        assert!(
            graph.index("lib.rs").is_some(),
            "no lib.rs under {}",
            src.display()
        );
        graph
    })
}

fn report(failures: &[String], what: &str) -> String {
    format!(
        "{} {what} in host/src:\n{}\n",
        failures.len(),
        failures.join("\n")
    )
}

#[test]
fn no_file_or_module_of_the_crate_imports_itself_through_others() {
    let failures = circle_failures(crate_graph());
    assert!(
        failures.is_empty(),
        "{}break each circle: move what both sides need into a lower file, or have the lower side \
         ask through a port (a trait declared low, implemented high)",
        report(&failures, "import circles")
    );
}

#[test]
fn every_import_between_modules_points_to_a_lower_layer() {
    let failures = layer_failures(crate_graph(), LAYERS);
    assert!(
        failures.is_empty(),
        "{}LAYERS (in host/tests/layers.rs) lists the layers bottom first; move the code, or \
         declare a port in the lower module and implement it in the higher one",
        report(&failures, "layer rule breaks")
    );
}

#[test]
fn the_folders_of_host_src_hold_the_layers_bottom_first() {
    let groups: Vec<&str> = LAYERS
        .iter()
        .flat_map(|layer| layer.iter())
        .map(|name| name.split("::").next().unwrap_or(name))
        .collect();
    let mut order = groups.clone();
    order.dedup();
    assert_eq!(
        order, GROUPS,
        "each folder holds consecutive layers, bottom first"
    );
    let mut folders: Vec<&str> = crate_graph()
        .files
        .iter()
        .filter_map(|f| f.unit())
        .filter_map(|unit| unit.split_once("::").map(|(group, _)| group))
        .collect();
    folders.sort();
    folders.dedup();
    let mut expected = GROUPS.to_vec();
    expected.sort();
    assert_eq!(folders, expected, "every module sits in a folder of GROUPS");
}

#[test]
fn no_source_file_holds_more_than_450_lines_before_its_tests() {
    let failures = long_file_failures(crate_graph(), MAX_LINES_BEFORE_TESTS);
    assert!(
        failures.is_empty(),
        "{}",
        report(&failures, "files too long")
    );
}

/// A source folder written from `(path, text)` pairs; the folder lives as long as the guard.
fn tree(files: &[(&str, &str)]) -> (tempfile::TempDir, Graph) {
    let dir = tempfile::tempdir().expect("a temporary folder");
    for (rel, text) in files {
        let path: PathBuf = dir.path().join(rel);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("a folder");
        std::fs::write(&path, text).expect("a file written");
    }
    let graph = Graph::load(dir.path());
    (dir, graph)
}

fn strings(items: &[&[&str]]) -> Vec<Vec<String>> {
    items
        .iter()
        .map(|i| i.iter().map(|s| s.to_string()).collect())
        .collect()
}

#[test]
fn two_files_importing_each_other_are_a_circle_named_with_both_imports() {
    let (_dir, g) = tree(&[
        ("lib.rs", "pub mod net;\n"),
        ("net/mod.rs", "pub mod a;\npub mod b;\n"),
        ("net/a.rs", "use super::b::B;\npub struct A;\n"),
        ("net/b.rs", "pub struct B(crate::net::a::A);\n"),
    ]);
    assert_eq!(file_circles(&g), strings(&[&["net/a.rs", "net/b.rs"]]));
    let failures = circle_failures(&g);
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert!(
        failures[0].contains("net/a.rs imports net/b.rs (super::b::B)"),
        "{}",
        failures[0]
    );
    assert!(
        failures[0].contains("net/b.rs imports net/a.rs (crate::net::a::A)"),
        "{}",
        failures[0]
    );
}

#[test]
fn a_name_imported_through_a_parents_pub_use_is_an_import_of_the_file_that_defines_it() {
    let (_dir, g) = tree(&[
        ("lib.rs", "pub mod engine;\n"),
        (
            "engine/mod.rs",
            "mod effects;\nmod tools;\npub use effects::{Effect, Port as P};\n",
        ),
        (
            "engine/effects.rs",
            "use super::tools::Tool;\npub struct Effect(Tool);\n",
        ),
        (
            "engine/tools.rs",
            "use crate::engine::Effect;\npub struct Tool;\n",
        ),
    ]);
    assert_eq!(g.imports_of("engine/tools.rs"), ["engine/effects.rs"]);
    assert_eq!(
        file_circles(&g),
        strings(&[&["engine/effects.rs", "engine/tools.rs"]])
    );
}

#[test]
fn a_child_naming_its_parent_or_importing_in_its_tests_or_comments_imports_nothing() {
    let (_dir, g) = tree(&[
        ("lib.rs", "pub mod low;\npub mod high;\n"),
        ("low/mod.rs", "mod part;\npub struct Error;\n"),
        (
            "low/part.rs",
            concat!(
                "use super::Error;\n",
                "// use crate::high::H;\n",
                "#[cfg(test)]\n",
                "mod tests {\n",
                "    use crate::high::H;\n",
                "}\n",
            ),
        ),
        ("high.rs", "use crate::low::Error;\npub struct H;\n"),
    ]);
    assert!(
        g.imports_of("low/part.rs").is_empty(),
        "{:?}",
        g.imports_of("low/part.rs")
    );
    assert_eq!(g.imports_of("high.rs"), ["low/mod.rs"]);
    assert!(circle_failures(&g).is_empty());
}

#[test]
fn modules_that_import_each_other_through_different_files_are_a_module_circle() {
    let (_dir, g) = tree(&[
        ("lib.rs", "pub mod x;\npub mod y;\n"),
        ("x/mod.rs", "pub mod a;\npub mod b;\n"),
        ("x/a.rs", "use crate::y::{p::P, q};\n"),
        ("x/b.rs", "pub struct B;\n"),
        ("y/mod.rs", "pub mod p;\npub mod q;\n"),
        ("y/p.rs", "pub struct P;\n"),
        (
            "y/q.rs",
            "pub fn f() -> crate::x::b::B { crate::x::b::B }\n",
        ),
    ]);
    assert!(file_circles(&g).is_empty(), "{:?}", file_circles(&g));
    assert_eq!(module_circles(&g), strings(&[&["x", "y"]]));
    let failures = circle_failures(&g);
    assert_eq!(failures.len(), 1, "{failures:?}");
    // `use crate::y::{...}` names `y` itself too.
    assert_eq!(g.imports_of("x/a.rs"), ["y/mod.rs", "y/p.rs", "y/q.rs"]);
    assert!(
        failures[0].contains("x -> y: x/a.rs imports y/mod.rs (crate::y), and 2 more imports"),
        "{}",
        failures[0]
    );
    assert!(
        failures[0].contains("y -> x: y/q.rs imports x/b.rs (crate::x::b::B)"),
        "{}",
        failures[0]
    );
}

#[test]
fn modules_in_grouping_folders_are_layered_by_their_grouped_names() {
    let (dir, _) = tree(&[
        ("lib.rs", "pub mod low;\npub mod high;\n"),
        ("low/mod.rs", "//! Groups.\npub mod a;\n\npub mod b;\n"),
        ("low/a.rs", "pub struct A;\n"),
        ("low/b.rs", "use crate::high::c::C;\npub struct B;\n"),
        ("high/mod.rs", "pub mod c;\n"),
        ("high/c/mod.rs", "use crate::low::a::A;\npub struct C;\n"),
    ]);
    let g = Graph::load_grouped(dir.path(), &["low", "high"]);
    let units: Vec<Option<&str>> = g.files.iter().map(|f| f.unit()).collect();
    assert_eq!(
        units,
        [
            Some("high::c"),
            None,
            None,
            Some("low::a"),
            Some("low::b"),
            None
        ]
    );
    let layers: &[&[&str]] = &[&["low::a"], &["low::b"], &["high::c"]];
    assert_eq!(
        layer_failures(&g, layers),
        [
            "low/b.rs imports high/c/mod.rs (crate::high::c::C): `low::b` (layer 2) may import only \
          from layers below it, and `high::c` is in layer 3"
        ]
    );
}

#[test]
fn an_import_of_a_higher_or_same_layer_names_the_files_and_the_rule() {
    let (_dir, g) = tree(&[
        (
            "lib.rs",
            "pub mod text;\npub mod protocol;\npub mod store;\n",
        ),
        ("text.rs", "pub fn cut() {}\n"),
        ("protocol.rs", "use crate::text::cut;\n"),
        ("store/mod.rs", "pub mod rows;\n"),
        ("store/rows.rs", "pub struct Row;\n"),
        (
            "main.rs",
            "use tiny::store::rows::Row;\nuse crate::store::rows::Row as R;\n",
        ),
    ]);
    let layers: &[&[&str]] = &[&["text", "protocol", "http_body"], &["config"]];
    let failures = layer_failures(&g, layers);
    assert_eq!(
        failures,
        [
            "module `store` is in no layer: add it to LAYERS",
            "protocol.rs imports text.rs (crate::text::cut): `protocol` and `text` share layer 1, \
             and modules of one layer may not import each other",
        ]
    );
    let upward: &[&[&str]] = &[&["store"], &["protocol"], &["text"]];
    let failures = layer_failures(&g, upward);
    assert_eq!(
        failures,
        [
            "protocol.rs imports text.rs (crate::text::cut): `protocol` (layer 2) may import only \
          from layers below it, and `text` is in layer 3"
        ]
    );
    let twice: &[&[&str]] = &[&["store"], &["text"], &["protocol"], &["store"]];
    assert_eq!(
        layer_failures(&g, twice),
        ["`store` is in LAYERS twice (layers 1 and 4): keep one"]
    );
}

#[test]
fn an_upward_import_through_super_super_resolves_to_the_file_it_names() {
    let (_dir, g) = tree(&[
        ("lib.rs", "pub mod low;\npub mod high;\n"),
        ("low/mod.rs", "pub mod mid;\npub mod sibling;\n"),
        ("low/sibling.rs", "pub struct S;\n"),
        ("low/mid/mod.rs", "pub mod leaf;\n"),
        (
            "low/mid/leaf.rs",
            concat!(
                "use super::super::sibling::S;\n",
                "use super::super::super::high::{H, deep::D};\n",
                "fn f() -> super::super::Error {}\n",
            ),
        ),
        ("high/mod.rs", "pub mod deep;\npub struct H;\n"),
        ("high/deep.rs", "pub struct D;\n"),
    ]);
    assert_eq!(
        g.imports_of("low/mid/leaf.rs"),
        ["high/deep.rs", "high/mod.rs", "low/sibling.rs"]
    );
    let failures = layer_failures(&g, &[&["low"], &["high"]]);
    assert_eq!(failures.len(), 2, "{failures:?}");
    assert!(
        failures[0].starts_with(
            "low/mid/leaf.rs imports high/deep.rs (super::super::super::high::deep::D)"
        ),
        "{}",
        failures[0]
    );
    assert!(
        failures[1]
            .starts_with("low/mid/leaf.rs imports high/mod.rs (super::super::super::high::H)"),
        "{}",
        failures[1]
    );
}

#[test]
fn a_long_file_is_named_with_its_count_and_lines_in_its_tests_do_not_count() {
    let body = |n: usize| "fn f() {}\n".repeat(n);
    let (_dir, g) = tree(&[
        ("lib.rs", "pub mod long;\npub mod tested;\npub mod exact;\n"),
        ("long.rs", &body(451)),
        ("exact.rs", &body(450)),
        (
            "tested.rs",
            &format!(
                "{}#[cfg(test)]\nmod tests;\n#[cfg(test)]\nmod more {{\n{}}}\n",
                body(449),
                body(100)
            ),
        ),
        ("tested/tests.rs", &body(600)),
        ("store/tests/many.rs", &body(600)),
    ]);
    assert_eq!(long_files(&g, 450), [("long.rs".to_string(), 451)]);
    let failures = long_file_failures(&g, 450);
    assert!(
        failures[0].starts_with("long.rs: 451 lines before its tests, over the 450 allowed"),
        "{}",
        failures[0]
    );
}

#[test]
fn a_tree_whose_imports_point_down_passes_every_check() {
    let (_dir, g) = tree(&[
        (
            "lib.rs",
            "pub mod protocol;\npub mod store;\npub mod server;\n",
        ),
        (
            "main.rs",
            "use tiny::server::serve;\nfn main() { serve() }\n",
        ),
        ("protocol/mod.rs", "mod types;\npub use types::Task;\n"),
        ("protocol/types.rs", "pub struct Task;\n"),
        (
            "store/mod.rs",
            "use crate::protocol::Task;\npub fn put(_: Task) {}\n",
        ),
        (
            "server.rs",
            "use crate::{protocol::Task, store};\npub fn serve() { store::put(Task) }\n",
        ),
    ]);
    assert_eq!(
        g.imports_of("server.rs"),
        ["protocol/types.rs", "store/mod.rs"]
    );
    assert!(circle_failures(&g).is_empty());
    assert!(layer_failures(&g, &[&["protocol"], &["store"], &["server"]]).is_empty());
    assert!(long_file_failures(&g, 450).is_empty());
}
