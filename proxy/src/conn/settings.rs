//! Session settings a client expects on whichever server serves it: the
//! startup parameters it sent and the SET/RESET statements it ran, kept as
//! SET statements so they can be replayed on another server connection,
//! and what a server connection has applied of them.

use std::collections::BTreeMap;
use std::sync::Arc;

/// Startup parameters that are not settings (or that pgshard handles itself).
const NOT_SETTINGS: &[&str] = &["user", "database", "replication", "options"];

/// Settings by lower-cased name, each as the statement that applies it.
/// Shared on clone: a server's settings are usually a copy of its last
/// client's, so the comparison on every checkout is mostly a pointer's.
#[derive(Debug, Clone, Default, Eq)]
pub struct ParamSet(Arc<BTreeMap<String, String>>);

impl PartialEq for ParamSet {
    fn eq(&self, other: &ParamSet) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.0 == other.0
    }
}

/// By content, as equality is (the pointer only shortcuts it).
impl std::hash::Hash for ParamSet {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.hash(state);
    }
}

/// One change a successful statement made to the session's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParamChange {
    Set { name: String, sql: String },
    Reset { name: String },
    ResetAll,
}

impl ParamSet {
    /// The settings of a client's startup packet (its `options` `-c`
    /// switches included). Fails on options pgshard cannot honour.
    pub fn from_startup(params: &[(String, String)]) -> Result<ParamSet, OptionsError> {
        let mut set = ParamSet::default();
        for (name, value) in params {
            if name == "options" {
                for (name, value) in parse_options(value)? {
                    set.insert(&name, &value);
                }
            } else if !NOT_SETTINGS.contains(&name.as_str()) && !name.starts_with("_pq_.") {
                set.insert(name, value);
            }
        }
        Ok(set)
    }

    fn insert(&mut self, name: &str, value: &str) {
        // Setting names are case-insensitive: one spelling, so the same
        // setting from two clients compares equal.
        let name = name.to_ascii_lowercase();
        // set_config takes the value as the startup packet gives it: a list
        // setting (`search_path=a,public`) is split, where `SET name TO
        // 'a,public'` would make it one quoted element.
        let sql = format!(
            "SELECT pg_catalog.set_config({}, {}, false)",
            quote_literal(&name),
            quote_literal(value)
        );
        Arc::make_mut(&mut self.0).insert(name, sql);
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether setting `name` (lower case) is among these.
    pub fn contains(&self, name: &str) -> bool {
        self.0.contains_key(name)
    }

    /// Apply a change; `defaults` (the startup settings) is what RESET
    /// returns to, as in Postgres where startup values are the reset values.
    pub fn apply(&mut self, change: &ParamChange, defaults: &ParamSet) {
        match change {
            ParamChange::Set { name, sql } => {
                Arc::make_mut(&mut self.0).insert(name.clone(), sql.clone());
            }
            ParamChange::Reset { name } => match defaults.0.get(name) {
                Some(sql) => {
                    Arc::make_mut(&mut self.0).insert(name.clone(), sql.clone());
                }
                None => {
                    Arc::make_mut(&mut self.0).remove(name);
                }
            },
            ParamChange::ResetAll => self.0 = Arc::clone(&defaults.0),
        }
    }

    /// What a server whose session has exactly the settings in `server` sees
    /// when the same statement runs there: RESET goes to the server's own
    /// defaults, which hold none of the client's startup settings.
    pub fn apply_on_server(&mut self, change: &ParamChange) {
        self.apply(change, &ParamSet::default());
    }

    /// The simple query that takes a server from `server` to these settings,
    /// or `None` when they already match.
    pub fn sync_sql(&self, server: &ParamSet) -> Option<String> {
        if self == server {
            return None;
        }
        let mut sql = String::new();
        for name in server.0.keys().filter(|n| !self.0.contains_key(*n)) {
            sql.push_str(&format!("RESET {};", quote_ident(name)));
        }
        for (name, set) in self.0.iter() {
            if server.0.get(name) != Some(set) {
                // A newline ends a trailing `--` comment of the SET's text.
                sql.push_str(set);
                sql.push_str("\n;");
            }
        }
        Some(sql)
    }
}

/// `"name"` with embedded quotes doubled.
pub fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// `'value'` with embedded quotes doubled (standard_conforming_strings is on
/// in every supported Postgres, so backslashes are literal).
pub fn quote_literal(value: &str) -> String {
    format!("'{}'", value.replace('\'', "''"))
}

/// A startup `options` string pgshard cannot honour.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OptionsError {
    #[error("\"-c\" without a setting in options")]
    NoSetting,
    #[error("unsupported startup option \"{0}\"")]
    Unsupported(String),
    #[error("invalid startup option \"{0}\"")]
    Invalid(String),
}

/// The `-c name=value` and `--name=value` switches of a startup `options`
/// string, with `\` escaping spaces as libpq does.
fn parse_options(options: &str) -> Result<Vec<(String, String)>, OptionsError> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut chars = options.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => word.extend(chars.next()),
            c if c.is_whitespace() => {
                if !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
            }
            c => word.push(c),
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    let mut out = Vec::new();
    let mut words = words.into_iter();
    while let Some(word) = words.next() {
        let setting = if word == "-c" {
            words.next().ok_or(OptionsError::NoSetting)?
        } else if let Some(rest) = word.strip_prefix("--").or_else(|| word.strip_prefix("-c")) {
            rest.to_owned()
        } else {
            return Err(OptionsError::Unsupported(word));
        };
        let (name, value) = setting
            .split_once('=')
            .ok_or_else(|| OptionsError::Invalid(setting.clone()))?;
        out.push((name.replace('-', "_"), value.to_owned()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {

    use super::*;

    fn set(pairs: &[(&str, &str)]) -> ParamSet {
        let params: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        ParamSet::from_startup(&params).unwrap()
    }

    #[test]
    fn startup_params_become_set_statements() {
        let s = set(&[
            ("user", "u"),
            ("database", "d"),
            ("application_name", "it's"),
            (
                "options",
                "-c search_path=a,b --statement-timeout=5s -cwork_mem=1MB",
            ),
        ]);
        assert_eq!(
            s.sync_sql(&ParamSet::default()).unwrap(),
            "SELECT pg_catalog.set_config('application_name', 'it''s', false)\n;\
             SELECT pg_catalog.set_config('search_path', 'a,b', false)\n;\
             SELECT pg_catalog.set_config('statement_timeout', '5s', false)\n;\
             SELECT pg_catalog.set_config('work_mem', '1MB', false)\n;"
        );
        assert!(ParamSet::from_startup(&[("options".into(), "-x".into())]).is_err());
    }

    #[test]
    fn sync_resets_what_the_client_does_not_have() {
        let client = set(&[("TimeZone", "UTC")]);
        let server = set(&[("application_name", "x"), ("timezone", "UTC")]);
        assert_eq!(
            client.sync_sql(&server).unwrap(),
            "RESET \"application_name\";"
        );
        assert_eq!(client.sync_sql(&client), None);
    }
}
