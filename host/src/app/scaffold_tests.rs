//! Tests of `harness plugin new`'s folder: names, placeholders, the WIT, no overwriting.

use super::*;

fn plugin(name: &str, lang: Lang, dir: &Path) -> NewPlugin {
    NewPlugin {
        name: name.into(),
        lang,
        dir: dir.to_path_buf(),
        sdk: Sdk::Git,
    }
}

fn file<'a>(files: &'a [(String, String)], path: &str) -> &'a str {
    files
        .iter()
        .find(|(p, _)| p == path)
        .map(|(_, text)| text.as_str())
        .unwrap_or_else(|| panic!("no {path}"))
}

fn repo_file(path: &str) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    std::fs::read_to_string(root.join(path)).unwrap()
}

#[test]
fn names_a_crate_a_package_and_a_toml_key_all_take_are_accepted() {
    for name in [
        "weather",
        "crm-lookup",
        "a",
        "v2-api",
        &"a".repeat(MAX_NAME_CHARS),
    ] {
        assert!(check_name(name).is_ok(), "{name}");
    }
}

#[test]
fn other_names_are_refused_with_the_rule() {
    for name in [
        "",
        "Weather",
        "2fa",
        "-x",
        "x-",
        "a--b",
        "snake_case",
        "dot.ted",
        "sp ace",
        "../escape",
        "é",
        &"a".repeat(MAX_NAME_CHARS + 1),
    ] {
        let err = check_name(name).unwrap_err();
        assert!(err.to_string().contains(NAME_RULE), "{name}: {err}");
    }
    assert_eq!(
        check_name("Bad\nName").unwrap_err().to_string(),
        "plugin name \"Bad\\nName\" is not valid: use a lower-case ASCII letter, then lower-case \
         letters, digits and single dashes, not ending in a dash, at most 48 characters (e.g. \
         `weather` or `crm-lookup`)"
    );
}

#[test]
fn the_tool_name_fits_the_model_apis_limit_for_the_longest_name() {
    assert_eq!(tool_name("crm-lookup"), "crm_lookup_hello");
    assert!(tool_name(&"a".repeat(MAX_NAME_CHARS)).len() <= 64);
}

#[test]
fn every_placeholder_is_filled_in_every_language_but_the_scripted_models_own() {
    for lang in [Lang::Rust, Lang::Python, Lang::JavaScript] {
        let files = render(&plugin("crm-lookup", lang, Path::new("x"))).unwrap();
        for (path, text) in &files {
            let rest = text.replace("{{last_tool_result}}", "");
            assert!(
                !rest.contains("{{"),
                "{lang:?} {path} keeps a placeholder:\n{text}"
            );
        }
        assert!(file(&files, "try/script.toml").contains("name = \"crm_lookup_hello\""));
        assert!(file(&files, "README.md").contains("Hello, Ada, from crm-lookup!"));
    }
}

#[test]
fn python_and_javascript_carry_the_harness_wit_and_rust_takes_it_from_the_sdk() {
    let wit = repo_file("wit/plugin.wit");
    for lang in [Lang::Python, Lang::JavaScript] {
        let files = render(&plugin("p", lang, Path::new("x"))).unwrap();
        assert_eq!(file(&files, "wit/plugin.wit"), wit);
    }
    let files = render(&plugin("p", Lang::Rust, Path::new("x"))).unwrap();
    assert!(files.iter().all(|(path, _)| !path.starts_with("wit/")));
    let js = render(&plugin("p", Lang::JavaScript, Path::new("x"))).unwrap();
    assert!(file(&js, "src/plugin.js").contains(&format!(
        "from 'tiny-harness:plugin/host@{}'",
        wit_version()
    )));
    assert!(wit.contains(&format!("package tiny-harness:plugin@{};", wit_version())));
}

#[test]
fn every_file_of_the_wit_folder_is_embedded() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../wit");
    let mut on_disk: Vec<String> = std::fs::read_dir(root)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    on_disk.sort();
    let mut embedded: Vec<String> = WIT_FILES.iter().map(|(f, _)| f.to_string()).collect();
    embedded.sort();
    assert_eq!(
        embedded, on_disk,
        "add each file of wit/ to scaffold::WIT_FILES so new plugins build against it"
    );
}

#[test]
fn the_templates_pin_the_toolchains_the_examples_are_built_with() {
    let python = render(&plugin("p", Lang::Python, Path::new("x"))).unwrap();
    assert_eq!(
        file(&python, "requirements.txt"),
        repo_file("plugins/python-example/requirements.txt")
    );
    let js = render(&plugin("p", Lang::JavaScript, Path::new("x"))).unwrap();
    let deps = |text: &str| {
        serde_json::from_str::<serde_json::Value>(text).unwrap()["dependencies"].clone()
    };
    assert_eq!(
        deps(file(&js, "package.json")),
        deps(&repo_file("plugins/js-example/package.json"))
    );
}

#[test]
fn a_rust_plugin_depends_on_the_sdk_by_git_or_by_the_path_given() {
    let git = render(&plugin("p", Lang::Rust, Path::new("x"))).unwrap();
    assert!(file(&git, "Cargo.toml").contains(&format!(
        "tiny-harness-plugin-sdk = {{ git = \"{SDK_GIT}\" }}"
    )));
    assert_eq!(SDK_GIT, "https://github.com/MadaraUchiha-314/tiny-harness");
    let mut local = plugin("p", Lang::Rust, Path::new("x"));
    local.sdk = Sdk::Path(PathBuf::from("/src/th \"x\"/plugins/sdk-rust"));
    let files = render(&local).unwrap();
    assert!(
        file(&files, "Cargo.toml").contains(
            "tiny-harness-plugin-sdk = { path = \"/src/th \\\"x\\\"/plugins/sdk-rust\" }"
        )
    );
    let mut python = plugin("p", Lang::Python, Path::new("x"));
    python.sdk = local.sdk.clone();
    assert_eq!(
        render(&python).unwrap_err().to_string(),
        "--sdk-path is for --lang rust only (Python and JavaScript plugins carry the WIT)"
    );
}

#[test]
fn a_new_folder_holds_every_file_and_the_report_says_how_to_build_it() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("deep/er/weather");
    let written = write(&plugin("weather", Lang::Python, &dir)).unwrap();
    for file in &written.files {
        assert!(dir.join(file).is_file(), "{file}");
    }
    let report = report(&written, Lang::Python);
    assert!(
        report.contains("--output try/plugins/weather.wasm"),
        "{report}"
    );
    assert!(
        report.contains(&format!("cd {}", dir.display())),
        "{report}"
    );
}

#[test]
fn an_existing_folder_is_never_written_into() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("weather");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("app.py"), "mine").unwrap();
    let err = write(&plugin("weather", Lang::Python, &dir)).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "{}: already exists; nothing was written (choose another NAME or --dir)",
            dir.display()
        )
    );
    assert_eq!(std::fs::read_to_string(dir.join("app.py")).unwrap(), "mine");
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
}

#[test]
fn a_bad_name_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("Weather");
    assert!(matches!(
        write(&plugin("Weather", Lang::Rust, &dir)),
        Err(ScaffoldError::Name { .. })
    ));
    assert!(!dir.exists());
}

#[test]
fn a_relative_sdk_path_is_written_absolute_and_a_wrong_one_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let sdk = Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugins/sdk-rust");
    let mut rust = plugin("p", Lang::Rust, &tmp.path().join("p"));
    rust.sdk = Sdk::Path(sdk.clone());
    write(&rust).unwrap();
    let manifest = std::fs::read_to_string(tmp.path().join("p/Cargo.toml")).unwrap();
    let absolute = sdk.canonicalize().unwrap();
    assert!(
        manifest.contains(&format!("path = \"{}\"", absolute.display())),
        "{manifest}"
    );
    rust.dir = tmp.path().join("q");
    rust.sdk = Sdk::Path(tmp.path().to_path_buf());
    let err = write(&rust).unwrap_err().to_string();
    assert_eq!(
        err,
        format!(
            "--sdk-path {}: it holds no Cargo.toml; give the plugins/sdk-rust folder of a \
             tiny-harness checkout",
            tmp.path().display()
        )
    );
    assert!(!rust.dir.exists());
}
