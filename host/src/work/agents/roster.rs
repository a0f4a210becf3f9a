//! The roster: what the model may know of each registered agent (its id, its card's name and
//! description, each skill's name and description), cleaned and capped once at start-up.
//!
//! This is also what a plugin receives (design § trust boundary 1): the roster is built in the
//! host, so no plugin ever sees raw card text and none can undo the cleaning.

use crate::base::protocol::card::AgentCard;

use super::clean::{clean, cut};
use super::registry::Registry;
pub use crate::base::config::card::Caps;

/// A skill as the model reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillSummary {
    /// The skill's name, cleaned and capped.
    pub name: String,
    /// The skill's description, cleaned and capped.
    pub description: String,
}

/// One agent as the model reads it. `id` is the value `spawn_subtask` takes as `agent`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RosterEntry {
    /// The operator's id for the agent (`[[agents]] id`), never the card's words.
    pub id: String,
    /// The card's name, cleaned and capped.
    pub name: String,
    /// The card's description, cleaned and capped.
    pub description: String,
    /// The card's first skills, cleaned and capped.
    pub skills: Vec<SkillSummary>,
    /// Skills the card declares beyond [`Caps::skills`]: counted so the section can say so.
    pub omitted_skills: usize,
}

/// A field the roster shortened, or skills it left out: reported once, at start-up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cut {
    /// `field` (`name`, `description`, `skills[2].name`) was cut to `max` characters.
    Field {
        /// The agent's id.
        agent: String,
        /// The card field that was cut.
        field: String,
        /// The cap it was cut to, in characters.
        max: usize,
    },
    /// Only the first `kept` of the card's skills are listed.
    Skills {
        /// The agent's id.
        agent: String,
        /// Skills listed.
        kept: usize,
        /// Skills left out.
        dropped: usize,
    },
}

/// Every registered agent's entry: `self` first, then the remote agents by id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Roster {
    entries: Vec<RosterEntry>,
    cuts: Vec<Cut>,
}

impl Roster {
    /// `self`'s entry (this harness, from its own card).
    pub fn self_entry(&self) -> &RosterEntry {
        &self.entries[0]
    }

    /// The remote agents' entries, by id.
    pub fn remote(&self) -> &[RosterEntry] {
        &self.entries[1..]
    }

    /// Every entry, `self` first.
    pub fn entries(&self) -> &[RosterEntry] {
        &self.entries
    }

    /// What was cut while building, in entry order.
    pub fn cuts(&self) -> &[Cut] {
        &self.cuts
    }
}

/// Builds the roster from the registry, logging each cut once at WARNING and the ids listed
/// once at INFO.
pub fn build_roster(registry: &Registry, caps: Caps) -> Roster {
    let mut entries = Vec::new();
    let mut cuts = Vec::new();
    for agent in registry.agents() {
        let (entry, entry_cuts) = entry_from_card(&agent.id, &agent.card, caps);
        entries.push(entry);
        cuts.extend(entry_cuts);
    }
    for cut in &cuts {
        match cut {
            Cut::Field { agent, field, max } => tracing::warn!(
                agent = %agent,
                field = %field,
                "agents: card field cut to {max} characters"
            ),
            Cut::Skills {
                agent,
                kept,
                dropped,
            } => tracing::warn!(
                agent = %agent,
                "agents: card lists {} skills; only the first {kept} are shown, {dropped} dropped (roster.max_skills)",
                kept + dropped
            ),
        }
    }
    let ids: Vec<&str> = entries.iter().map(|e| e.id.as_str()).collect();
    tracing::info!("agents: roster lists {}", ids.join(", "));
    Roster { entries, cuts }
}

/// One agent's entry and what had to be cut to make it.
pub fn entry_from_card(id: &str, card: &AgentCard, caps: Caps) -> (RosterEntry, Vec<Cut>) {
    let mut cuts = Vec::new();
    let mut field = |field: String, text: &str, max: usize| {
        let cleaned = clean(text);
        match cut(&cleaned, max) {
            Some(shorter) => {
                cuts.push(Cut::Field {
                    agent: id.to_string(),
                    field,
                    max,
                });
                shorter
            }
            None => cleaned,
        }
    };
    let name = field("name".into(), &card.name, caps.name);
    let description = field("description".into(), &card.description, caps.description);
    let skills = card
        .skills
        .iter()
        .take(caps.skills)
        .enumerate()
        .map(|(i, skill)| SkillSummary {
            name: field(format!("skills[{i}].name"), &skill.name, caps.skill_name),
            description: field(
                format!("skills[{i}].description"),
                &skill.description,
                caps.skill_description,
            ),
        })
        .collect();
    let omitted_skills = card.skills.len().saturating_sub(caps.skills);
    if omitted_skills > 0 {
        cuts.push(Cut::Skills {
            agent: id.to_string(),
            kept: caps.skills,
            dropped: omitted_skills,
        });
    }
    let entry = RosterEntry {
        id: id.to_string(),
        name,
        description,
        skills,
        omitted_skills,
    };
    (entry, cuts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::protocol::card::AgentSkill;

    fn card(name: &str, description: &str, skills: usize) -> AgentCard {
        AgentCard {
            name: name.into(),
            description: description.into(),
            skills: (0..skills)
                .map(|i| AgentSkill {
                    id: format!("s{i}"),
                    name: format!("Skill {i}"),
                    description: format!("Does thing {i}."),
                    ..AgentSkill::default()
                })
                .collect(),
            ..AgentCard::default()
        }
    }

    #[test]
    fn an_entry_keeps_exactly_the_id_name_description_and_skills() {
        let (entry, cuts) =
            entry_from_card("ledger", &card("Ledger", "Accounts.", 2), Caps::DEFAULT);
        assert_eq!(
            entry,
            RosterEntry {
                id: "ledger".into(),
                name: "Ledger".into(),
                description: "Accounts.".into(),
                skills: vec![
                    SkillSummary {
                        name: "Skill 0".into(),
                        description: "Does thing 0.".into()
                    },
                    SkillSummary {
                        name: "Skill 1".into(),
                        description: "Does thing 1.".into()
                    },
                ],
                omitted_skills: 0,
            }
        );
        assert!(cuts.is_empty());
    }

    #[test]
    fn long_fields_are_cut_with_an_ellipsis_and_each_cut_is_reported_once() {
        let long = "x".repeat(1_000_000);
        let mut hostile = card(&long, &long, 1);
        hostile.skills[0].name = long.clone();
        hostile.skills[0].description = long.clone();
        let (entry, cuts) = entry_from_card("big", &hostile, Caps::DEFAULT);
        assert_eq!(entry.name.chars().count(), 64);
        assert!(entry.name.ends_with('…'));
        assert_eq!(entry.description.chars().count(), 512);
        assert_eq!(entry.skills[0].name.chars().count(), 64);
        assert_eq!(entry.skills[0].description.chars().count(), 256);
        let fields: Vec<&str> = cuts
            .iter()
            .map(|c| match c {
                Cut::Field { field, .. } => field.as_str(),
                Cut::Skills { .. } => "skills",
            })
            .collect();
        assert_eq!(
            fields,
            [
                "name",
                "description",
                "skills[0].name",
                "skills[0].description"
            ]
        );
    }

    #[test]
    fn skills_beyond_the_cap_are_counted_not_listed() {
        let (entry, cuts) = entry_from_card("many", &card("Many", "d", 500), Caps::DEFAULT);
        assert_eq!(entry.skills.len(), 8);
        assert_eq!(entry.omitted_skills, 492);
        assert_eq!(
            cuts,
            [Cut::Skills {
                agent: "many".into(),
                kept: 8,
                dropped: 492
            }]
        );
    }

    #[test]
    fn caps_apply_to_cleaned_text_so_removed_characters_do_not_count() {
        let padded = format!("{}Ledger", "\u{200B}".repeat(100));
        let (entry, cuts) = entry_from_card("l", &card(&padded, "", 0), Caps::DEFAULT);
        assert_eq!(entry.name, "Ledger");
        assert!(cuts.is_empty());
    }
}
