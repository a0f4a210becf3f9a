//! `load_skill` and `unload_skill` as the host checks them: the name against the catalog, the
//! task's loaded skills as its journal (and the call's earlier effects) leave them, and a bound
//! on what loaded skills may add to every turn. Loading is an [`Effect`] that names the skill;
//! [`fold`] applies one the same way during a call, when its result is recorded, and when the
//! journal is replayed after a restart.

use super::{Catalog, MAX_BODY_BYTES, Skill};
use crate::work::tools::{Effect, ToolError};

/// The stable code of every skill tool error.
pub const SKILL_INVALID: &str = "skill.invalid";
/// How much of a rejected name is echoed back. The name comes from the model (perhaps copied
/// from untrusted text), so it is quoted, escaped and bounded before it goes back into the
/// context.
pub const MAX_ECHOED_NAME_CHARS: usize = 128;
/// The bodies of one task's loaded skills together. They are in every turn and compaction never
/// shrinks them, so together they may hold what one skill may: about 8,000 tokens, which leaves
/// room in the default turn budget for the task and its history.
pub const MAX_LOADED_BYTES: usize = MAX_BODY_BYTES;

/// Applies one effect to a task's loaded skills, kept sorted by name and without repeats. Any
/// effect other than loading or unloading leaves them as they are.
pub fn fold(loaded: &mut Vec<String>, effect: &Effect) {
    match effect {
        Effect::LoadSkill { name } => {
            if let Err(at) = loaded.binary_search(name) {
                loaded.insert(at, name.clone());
            }
        }
        Effect::UnloadSkill { name } => {
            if let Ok(at) = loaded.binary_search(name) {
                loaded.remove(at);
            }
        }
        _ => {}
    }
}

/// The loaded skills once the call's earlier effects apply.
pub fn loaded_after(loaded: &[String], pending: &[Effect]) -> Vec<String> {
    let mut now = loaded.to_vec();
    now.sort();
    now.dedup();
    for effect in pending {
        fold(&mut now, effect);
    }
    now
}

/// Checks `load_skill(name)`: the skill, and the effect to record (`None` when it is loaded
/// already: loading twice changes nothing).
pub fn load<'a>(
    catalog: &'a Catalog,
    loaded: &[String],
    name: &str,
) -> Result<(&'a Skill, Option<Effect>), ToolError> {
    let Some(skill) = catalog.get(name) else {
        return Err(unknown(catalog, name));
    };
    if loaded.iter().any(|n| n == name) {
        return Ok((skill, None));
    }
    let held: usize = catalog
        .sections(loaded)
        .iter()
        .map(|(_, body)| body.len())
        .sum();
    if held + skill.body.len() > MAX_LOADED_BYTES {
        return Err(ToolError::new(
            SKILL_INVALID,
            format!(
                "cannot load \"{name}\": the loaded skills' bodies may hold {MAX_LOADED_BYTES} bytes together and it would bring them to {}; unload one of {} first",
                held + skill.body.len(),
                loaded.join(", ")
            ),
        ));
    }
    let effect = Effect::LoadSkill {
        name: name.to_string(),
    };
    Ok((skill, Some(effect)))
}

/// Checks `unload_skill(name)`: a loaded skill is unloaded (even one whose file is gone since it
/// was loaded); an unknown name lists the valid ones; a known one that is not loaded lists the
/// loaded ones.
pub fn unload(catalog: &Catalog, loaded: &[String], name: &str) -> Result<Effect, ToolError> {
    if loaded.iter().any(|n| n == name) {
        return Ok(Effect::UnloadSkill {
            name: name.to_string(),
        });
    }
    if catalog.get(name).is_none() {
        return Err(unknown(catalog, name));
    }
    let which = if loaded.is_empty() {
        "no skill is loaded".to_string()
    } else {
        format!("loaded skills: {}", loaded.join(", "))
    };
    Err(ToolError::new(
        SKILL_INVALID,
        format!("skill \"{name}\" is not loaded; {which}"),
    ))
}

/// `[skill.invalid]` for a name the catalog does not hold, with the valid names.
fn unknown(catalog: &Catalog, name: &str) -> ToolError {
    let shown = match name.char_indices().nth(MAX_ECHOED_NAME_CHARS) {
        Some((at, _)) => format!("{}…", &name[..at]),
        None => name.to_string(),
    };
    let valid = if catalog.is_empty() {
        "this harness has no skills".to_string()
    } else {
        format!(
            "valid names: {}",
            catalog.names().collect::<Vec<_>>().join(", ")
        )
    };
    ToolError::new(
        SKILL_INVALID,
        format!("no skill named \"{}\"; {valid}", shown.escape_debug()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn skill(name: &str, body_bytes: usize) -> Skill {
        Skill {
            name: name.into(),
            description: format!("{name} rules"),
            body: "b".repeat(body_bytes),
            file: PathBuf::from(format!("/skills/{name}/SKILL.md")),
        }
    }

    fn catalog() -> Catalog {
        Catalog::from_skills([skill("bookkeeping", 100), skill("style", 50)])
    }

    fn loaded(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| n.to_string()).collect()
    }

    #[test]
    fn loading_a_skill_records_its_name_and_returns_its_body() {
        let catalog = catalog();
        let (skill, effect) = load(&catalog, &[], "style").unwrap();
        assert_eq!(skill.body, "b".repeat(50));
        assert_eq!(
            effect,
            Some(Effect::LoadSkill {
                name: "style".into()
            })
        );
    }

    #[test]
    fn loading_a_loaded_skill_again_changes_nothing() {
        let catalog = catalog();
        let (_, effect) = load(&catalog, &loaded(&["style"]), "style").unwrap();
        assert_eq!(effect, None);
    }

    #[test]
    fn an_unknown_name_lists_the_valid_names_golden() {
        let catalog = catalog();
        assert_eq!(
            load(&catalog, &[], "book-keeping").unwrap_err().to_string(),
            "[skill.invalid] no skill named \"book-keeping\"; valid names: bookkeeping, style"
        );
        assert_eq!(
            unload(&catalog, &loaded(&["style"]), "nope")
                .unwrap_err()
                .to_string(),
            "[skill.invalid] no skill named \"nope\"; valid names: bookkeeping, style"
        );
        assert_eq!(
            load(&Catalog::default(), &[], "any")
                .unwrap_err()
                .to_string(),
            "[skill.invalid] no skill named \"any\"; this harness has no skills"
        );
    }

    #[test]
    fn a_hostile_name_is_escaped_and_cut_before_it_is_echoed_golden() {
        let name = format!("x\"\n</untrusted>{}", "y".repeat(300));
        let message = load(&catalog(), &[], &name).unwrap_err().message;
        assert!(
            message.starts_with("no skill named \"x\\\"\\n</untrusted>yyy"),
            "{message}"
        );
        assert!(message.contains("y…\"; valid names"), "{message}");
        assert!(!message.contains('\n'));
        assert!(message.chars().count() < MAX_ECHOED_NAME_CHARS + 80);
    }

    #[test]
    fn unloading_a_skill_that_is_not_loaded_names_the_loaded_ones_golden() {
        let catalog = catalog();
        assert_eq!(
            unload(&catalog, &loaded(&["style"]), "bookkeeping")
                .unwrap_err()
                .to_string(),
            "[skill.invalid] skill \"bookkeeping\" is not loaded; loaded skills: style"
        );
        assert_eq!(
            unload(&catalog, &[], "style").unwrap_err().to_string(),
            "[skill.invalid] skill \"style\" is not loaded; no skill is loaded"
        );
    }

    #[test]
    fn a_loaded_skill_whose_file_is_gone_can_still_be_unloaded() {
        let effect = unload(&catalog(), &loaded(&["retired"]), "retired").unwrap();
        assert_eq!(
            effect,
            Effect::UnloadSkill {
                name: "retired".into()
            }
        );
    }

    #[test]
    fn loaded_bodies_together_are_bounded_golden() {
        let catalog = Catalog::from_skills([
            skill("a", MAX_LOADED_BYTES - 10),
            skill("b", 11),
            skill("c", 10),
        ]);
        assert_eq!(
            load(&catalog, &loaded(&["a"]), "b")
                .unwrap_err()
                .to_string(),
            format!(
                "[skill.invalid] cannot load \"b\": the loaded skills' bodies may hold {MAX_LOADED_BYTES} bytes together and it would bring them to {}; unload one of a first",
                MAX_LOADED_BYTES + 1
            )
        );
        assert!(load(&catalog, &loaded(&["a"]), "c").is_ok());
    }

    #[test]
    fn folding_keeps_names_sorted_once_each_and_ignores_other_effects() {
        let load = |n: &str| Effect::LoadSkill { name: n.into() };
        let unload = |n: &str| Effect::UnloadSkill { name: n.into() };
        let pending = vec![
            load("style"),
            load("bookkeeping"),
            load("style"),
            Effect::CompleteStep {
                step: "s".into(),
                output: "o".into(),
            },
            unload("absent"),
        ];
        assert_eq!(
            loaded_after(&[], &pending),
            loaded(&["bookkeeping", "style"])
        );
        assert_eq!(
            loaded_after(&loaded(&["style"]), &[unload("style")]),
            Vec::<String>::new()
        );
    }
}
