//! `harness plugin new`: writes a plugin folder in Rust, Python or JavaScript with one section,
//! one tool, the WIT it builds against and a configuration that tries it with the scripted model.
//!
//! The templates are files under `host/templates/plugin/`, embedded at build time, and so is the
//! WIT (`wit/`): a folder written by a harness always matches the contract that harness loads.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The longest plugin name: the tool is named `<name>_hello` with dashes as underscores, and a
/// tool name may hold 64 characters (the model APIs' limit).
pub const MAX_NAME_CHARS: usize = 48;

/// What a name must look like, said in the error: a name that is at once a crate, an npm
/// package, a file name, a section name and a bare TOML key.
pub const NAME_RULE: &str = "a lower-case ASCII letter, then lower-case letters, digits and \
     single dashes, not ending in a dash, at most 48 characters (e.g. `weather` or `crm-lookup`)";

/// Where the guest SDK comes from when no `--sdk-path` is given: this repository, which cargo
/// clones whole, so the SDK finds the WIT beside it (`plugins/sdk-rust` reads `../../wit`).
pub const SDK_GIT: &str = env!("CARGO_PKG_REPOSITORY");

/// The suffix of the one tool a new plugin has.
const TOOL_SUFFIX: &str = "_hello";

/// The WIT of the harness, written into a Python or JavaScript plugin's `wit/` folder: every
/// file of the repository's `wit/`, by its path there (`deps/…` included; a unit test checks
/// none is left out).
const WIT_FILES: &[(&str, &str)] = &[("plugin.wit", include_str!("../../../wit/plugin.wit"))];

/// The language of a new plugin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    /// A crate on the guest SDK, built by cargo for `wasm32-wasip2`.
    Rust,
    /// A module built by componentize-py.
    Python,
    /// An ES module built by componentize-js.
    JavaScript,
}

impl Lang {
    /// The names `--lang` takes.
    pub const NAMES: [&'static str; 3] = ["rust", "python", "javascript"];

    /// The language `--lang` names.
    pub fn parse(name: &str) -> Option<Lang> {
        match name {
            "rust" => Some(Lang::Rust),
            "python" => Some(Lang::Python),
            "javascript" => Some(Lang::JavaScript),
            _ => None,
        }
    }

    fn title(self) -> &'static str {
        match self {
            Lang::Rust => "Rust",
            Lang::Python => "Python",
            Lang::JavaScript => "JavaScript",
        }
    }
}

/// Where a Rust plugin's guest SDK comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sdk {
    /// A git dependency on this repository ([`SDK_GIT`]).
    Git,
    /// A path dependency on a checkout's `plugins/sdk-rust` (offline, or a harness built from
    /// that checkout).
    Path(PathBuf),
}

/// What to write.
#[derive(Debug, Clone)]
pub struct NewPlugin {
    /// The plugin's name (checked against [`NAME_RULE`]).
    pub name: String,
    /// The language of its source.
    pub lang: Lang,
    /// The folder to create; it must not exist.
    pub dir: PathBuf,
    /// For Rust only.
    pub sdk: Sdk,
}

/// Why nothing was written.
#[derive(Debug, thiserror::Error)]
pub enum ScaffoldError {
    /// The name breaks [`NAME_RULE`].
    #[error("plugin name \"{name}\" is not valid: use {NAME_RULE}")]
    Name {
        /// The name given, escaped and capped.
        name: String,
    },
    /// The folder (or a file of that name) exists.
    #[error("{}: already exists; nothing was written (choose another NAME or --dir)", .0.display())]
    Exists(PathBuf),
    /// `--sdk-path` given for a language that does not use the Rust SDK.
    #[error("--sdk-path is for --lang rust only (Python and JavaScript plugins carry the WIT)")]
    SdkForOtherLang,
    /// `--sdk-path` is not a folder holding a `Cargo.toml`.
    #[error("--sdk-path {}: {reason}; give the plugins/sdk-rust folder of a tiny-harness checkout", path.display())]
    SdkPath {
        /// The path given.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// A folder or file could not be written (the new folder is removed again).
    #[error("cannot write {}: {source}", path.display())]
    Write {
        /// What could not be written.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// A plugin folder written.
#[derive(Debug)]
pub struct Written {
    /// The folder created.
    pub dir: PathBuf,
    /// Paths relative to `dir`, in the order written.
    pub files: Vec<String>,
    /// The shell commands that build it, run from `dir`.
    pub build: String,
}

/// Checks a plugin name against [`NAME_RULE`].
pub fn check_name(name: &str) -> Result<(), ScaffoldError> {
    let bytes = name.as_bytes();
    let ok = bytes.first().is_some_and(u8::is_ascii_lowercase)
        && bytes.len() <= MAX_NAME_CHARS
        && !name.ends_with('-')
        && !name.contains("--")
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-');
    if ok {
        Ok(())
    } else {
        Err(ScaffoldError::Name {
            name: crate::base::text::log_field::escape_capped(name, MAX_NAME_CHARS + 16),
        })
    }
}

/// The name of the one tool a plugin called `name` gets.
pub fn tool_name(name: &str) -> String {
    format!("{}{TOOL_SUFFIX}", name.replace('-', "_"))
}

/// The WIT package version the embedded contract declares (`0.1.0`), which a JavaScript plugin
/// names in its imports.
pub fn wit_version() -> &'static str {
    WIT_FILES
        .iter()
        .find_map(|(_, text)| {
            let line = text
                .lines()
                .find(|l| l.starts_with("package tiny-harness:plugin@"))?;
            Some(line["package tiny-harness:plugin@".len()..].trim_end_matches(';'))
        })
        .expect("wit/plugin.wit declares package tiny-harness:plugin@VERSION")
}

/// The files of a new plugin, relative paths with their text.
pub fn render(plugin: &NewPlugin) -> Result<Vec<(String, String)>, ScaffoldError> {
    check_name(&plugin.name)?;
    if plugin.lang != Lang::Rust && plugin.sdk != Sdk::Git {
        return Err(ScaffoldError::SdkForOtherLang);
    }
    let mut files: Vec<(&str, &str)> = match plugin.lang {
        Lang::Rust => vec![
            (
                "Cargo.toml",
                include_str!("../../templates/plugin/rust/Cargo.toml"),
            ),
            (
                "src/lib.rs",
                include_str!("../../templates/plugin/rust/src/lib.rs"),
            ),
        ],
        Lang::Python => vec![
            (
                "app.py",
                include_str!("../../templates/plugin/python/app.py"),
            ),
            (
                "requirements.txt",
                include_str!("../../templates/plugin/python/requirements.txt"),
            ),
        ],
        Lang::JavaScript => vec![
            (
                "package.json",
                include_str!("../../templates/plugin/javascript/package.json"),
            ),
            (
                "build.mjs",
                include_str!("../../templates/plugin/javascript/build.mjs"),
            ),
            (
                "src/plugin.js",
                include_str!("../../templates/plugin/javascript/src/plugin.js"),
            ),
        ],
    };
    files.extend([
        (
            "README.md",
            include_str!("../../templates/plugin/common/README.md"),
        ),
        (
            ".gitignore",
            include_str!("../../templates/plugin/common/gitignore"),
        ),
        (
            "try/config.toml",
            include_str!("../../templates/plugin/common/try/config.toml"),
        ),
        (
            "try/script.toml",
            include_str!("../../templates/plugin/common/try/script.toml"),
        ),
    ]);
    let values = values(plugin);
    let mut rendered: Vec<(String, String)> = files
        .into_iter()
        .map(|(path, text)| (path.to_string(), fill(text, &values)))
        .collect();
    if plugin.lang != Lang::Rust {
        // The Rust SDK carries its own copy; the other languages build against this one.
        for (file, text) in WIT_FILES {
            rendered.push((format!("wit/{file}"), text.to_string()));
        }
    }
    Ok(rendered)
}

/// Writes a new plugin folder. The folder is created here and must not exist; if a file cannot
/// be written, the folder is removed again, so a failed run leaves nothing behind.
pub fn write(plugin: &NewPlugin) -> Result<Written, ScaffoldError> {
    let plugin = &NewPlugin {
        sdk: absolute_sdk(&plugin.sdk)?,
        ..plugin.clone()
    };
    let files = render(plugin)?;
    let dir = &plugin.dir;
    if dir.symlink_metadata().is_ok() {
        return Err(ScaffoldError::Exists(dir.clone()));
    }
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| ScaffoldError::Write { path, source }
    };
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(io(parent))?;
    }
    // `create_dir` fails on an existing folder, so a folder made meanwhile is never written into.
    std::fs::create_dir(dir).map_err(|err| match err.kind() {
        std::io::ErrorKind::AlreadyExists => ScaffoldError::Exists(dir.clone()),
        _ => io(dir)(err),
    })?;
    let written = files.iter().try_for_each(|(relative, text)| {
        let path = dir.join(relative);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(io(parent))?;
        }
        std::fs::write(&path, text).map_err(io(&path))
    });
    if let Err(err) = written {
        let _ = std::fs::remove_dir_all(dir);
        return Err(err);
    }
    Ok(Written {
        dir: dir.clone(),
        files: files.into_iter().map(|(path, _)| path).collect(),
        build: build_commands(plugin.lang, &plugin.name),
    })
}

/// The SDK path made absolute: the dependency is read relative to the new `Cargo.toml`, the path
/// was given relative to where the command ran.
fn absolute_sdk(sdk: &Sdk) -> Result<Sdk, ScaffoldError> {
    let Sdk::Path(path) = sdk else {
        return Ok(Sdk::Git);
    };
    let error = |reason: String| ScaffoldError::SdkPath {
        path: path.clone(),
        reason,
    };
    let absolute = path.canonicalize().map_err(|err| error(err.to_string()))?;
    if !absolute.join("Cargo.toml").is_file() {
        return Err(error("it holds no Cargo.toml".into()));
    }
    Ok(Sdk::Path(absolute))
}

/// What `harness plugin new` prints once the folder is written.
pub fn report(written: &Written, lang: Lang) -> String {
    let mut out = String::new();
    let dir = written.dir.display();
    let _ = writeln!(out, "wrote a {} plugin in {dir}:", lang.title());
    for file in &written.files {
        let _ = writeln!(out, "  {file}");
    }
    let _ = writeln!(out, "\nbuild it ({}):\n", build_needs(lang));
    let _ = writeln!(out, "  cd {}", shell_word(&dir.to_string()));
    for line in written.build.lines() {
        let _ = writeln!(out, "  {line}");
    }
    let _ = writeln!(
        out,
        "\nthen try it without a model: `harness serve --config try/config.toml` (see README.md),\n\
         or drop try/plugins/*.wasm into a harness's plugins folder (`plugins/` beside its \
         config.toml, or [plugins] dir)."
    );
    out
}

/// The commands that build a plugin into `try/plugins/{name}.wasm`, run from its folder.
pub fn build_commands(lang: Lang, name: &str) -> String {
    match lang {
        Lang::Rust => format!(
            "cargo build --target wasm32-wasip2 --release\n\
             mkdir -p try/plugins && cp target/wasm32-wasip2/release/{}.wasm try/plugins/{name}.wasm",
            name.replace('-', "_")
        ),
        Lang::Python => format!(
            "python3 -m venv .venv && .venv/bin/pip install -r requirements.txt\n\
             mkdir -p try/plugins\n\
             .venv/bin/componentize-py --wit-path wit --world harness-plugin componentize app \
             --python-path . --output try/plugins/{name}.wasm"
        ),
        Lang::JavaScript => "npm install\nnode build.mjs".to_string(),
    }
}

/// `text` as one shell word: as it is when it holds only characters no shell reads specially,
/// else in single quotes, so the printed `cd` works when pasted whatever the folder's name.
fn shell_word(text: &str) -> String {
    let plain = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+:,@%=".contains(c));
    if plain {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

fn build_needs(lang: Lang) -> &'static str {
    match lang {
        Lang::Rust => "Rust with `rustup target add wasm32-wasip2`",
        Lang::Python => "Python 3.9+ with venv; installs componentize-py",
        Lang::JavaScript => "Node.js 20+ with npm; installs componentize-js",
    }
}

/// The placeholders the templates hold, with their values.
fn values(plugin: &NewPlugin) -> Vec<(&'static str, String)> {
    let name = &plugin.name;
    let sdk_dependency = match &plugin.sdk {
        Sdk::Git => format!(
            "# To pin it to the commit of the harness you run, add `rev = \"<commit>\"`.\n\
             tiny-harness-plugin-sdk = {{ git = \"{SDK_GIT}\" }}"
        ),
        Sdk::Path(path) => format!(
            "tiny-harness-plugin-sdk = {{ path = \"{}\" }}",
            toml_escape(&path.display().to_string())
        ),
    };
    let wit_note = match plugin.lang {
        Lang::Rust => ", which the guest SDK carries",
        _ => ", copied into `wit/`",
    };
    vec![
        ("{{plugin_name}}", name.clone()),
        ("{{tool_name}}", tool_name(name)),
        ("{{wit_version}}", wit_version().to_string()),
        ("{{language}}", plugin.lang.title().to_string()),
        ("{{sdk_dependency}}", sdk_dependency),
        ("{{wit_note}}", wit_note.to_string()),
        (
            "{{build_needs}}",
            format!("Needs {}.", build_needs(plugin.lang)),
        ),
        ("{{build_commands}}", build_commands(plugin.lang, name)),
    ]
}

/// `text` with each placeholder replaced. Others (the scripted model's `{{last_tool_result}}`)
/// are left as they are.
fn fill(text: &str, values: &[(&str, String)]) -> String {
    values.iter().fold(text.to_string(), |text, (key, value)| {
        text.replace(key, value)
    })
}

fn toml_escape(text: &str) -> String {
    text.replace('\\', "\\\\").replace('"', "\\\"")
}

#[cfg(test)]
mod tests {
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
        assert!(NAME_RULE.contains(&format!("at most {MAX_NAME_CHARS} characters")));
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
        /// Every file under `dir`, as paths relative to `root` with `/` between parts, but
        /// those of the frozen older contracts (`wit/v0.1.0/`): a new plugin builds against
        /// the current one.
        fn files(root: &Path, dir: &Path, out: &mut Vec<String>) {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                let name = path.file_name().unwrap().to_string_lossy().to_string();
                let frozen = dir == root
                    && name.starts_with('v')
                    && name[1..].starts_with(|c: char| c.is_ascii_digit());
                if path.is_dir() && frozen {
                    continue;
                }
                if path.is_dir() {
                    files(root, &path, out);
                } else {
                    let relative = path.strip_prefix(root).unwrap();
                    let parts: Vec<_> = relative.iter().map(|p| p.to_string_lossy()).collect();
                    out.push(parts.join("/"));
                }
            }
        }
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../wit");
        let mut on_disk = Vec::new();
        files(&root, &root, &mut on_disk);
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
        assert!(file(&files, "Cargo.toml").contains(
            "tiny-harness-plugin-sdk = { path = \"/src/th \\\"x\\\"/plugins/sdk-rust\" }"
        ));
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
    fn the_printed_cd_quotes_a_folder_the_shell_would_split() {
        assert_eq!(shell_word("plugins/weather"), "plugins/weather");
        assert_eq!(shell_word("my plugins/it's"), "'my plugins/it'\\''s'");
        assert_eq!(shell_word("$HOME"), "'$HOME'");
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
}
