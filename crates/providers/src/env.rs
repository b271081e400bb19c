//! Where the pool reads variables from: the process's environment, or (in tests) a fixed map.
//! Keys are looked up by name at the moment a provider is asked, used for that request and
//! dropped; the pool keeps no copy, and nothing here prints a value.

use std::collections::BTreeMap;
use std::sync::Arc;

/// The variables the pool reads: the process's own, or a fixed set.
#[derive(Clone, Default)]
pub struct Env {
    fixed: Option<Arc<BTreeMap<String, String>>>,
}

impl std::fmt::Debug for Env {
    /// Names only: a fixed set may hold keys.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.fixed {
            None => f.write_str("Env::Process"),
            Some(vars) => f
                .debug_tuple("Env::Fixed")
                .field(&vars.keys().collect::<Vec<_>>())
                .finish(),
        }
    }
}

impl Env {
    /// The process's environment, read at each use.
    pub fn process() -> Env {
        Env { fixed: None }
    }

    /// Exactly these variables (tests; a daemon passing a client's settings).
    pub fn fixed(vars: BTreeMap<String, String>) -> Env {
        Env {
            fixed: Some(Arc::new(vars)),
        }
    }

    /// A variable's value; unset, empty and non-UTF-8 are all `None`.
    pub fn get(&self, name: &str) -> Option<String> {
        let value = match &self.fixed {
            None => std::env::var(name).ok(),
            Some(vars) => vars.get(name).cloned(),
        };
        value.filter(|v| !v.trim().is_empty())
    }

    /// Every variable (for building a CLI child's cleaned environment).
    pub(crate) fn all(&self) -> BTreeMap<String, String> {
        match &self.fixed {
            None => std::env::vars_os()
                .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
                .collect(),
            Some(vars) => (**vars).clone(),
        }
    }
}
