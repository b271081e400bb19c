//! Which variable Codex's selected model provider reads its key from: `env_key` of
//! `[model_providers.<id>]` in `$CODEX_HOME/config.toml`, for the provider the top-level
//! `model_provider` chooses. A relay that fails for want of that variable can then name it,
//! however Codex words its error.
//!
//! Profiles, as Codex 0.171.0 treats them (tried here): `-p/--profile NAME` layers
//! `$CODEX_HOME/NAME.config.toml` over the base config, and the bridge never passes it, so it
//! selects nothing for a relay; the older in-file form, `profile = "NAME"` selecting
//! `[profiles.NAME]`, is refused by 0.171.0 ("legacy `profile = …` config is no longer
//! supported") and honoured by the versions before it, so it is followed here (a profile's
//! `model_provider` wins over the top-level one). An unselected `[profiles.*]` table is ignored,
//! as Codex ignores it.
//!
//! Read-only, like every store reader. A config that is missing, unreadable, too large or not
//! TOML, or that selects a built-in provider or gives no `env_key`, is no answer rather than an
//! error: this only adds a hint to a failure, and never fails anything itself.

use std::io::Read as _;
use std::path::Path;

use toml_edit::{DocumentMut, Item};

/// The most of `config.toml` read. A real one is a few kilobytes; the cap keeps a hostile or
/// mistaken file (a device, a huge log) from being read whole.
const MAX_CONFIG_BYTES: u64 = 1024 * 1024;

/// The provider Codex would use and the variable it reads the key from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderKey {
    /// The provider's id, the `<id>` of `[model_providers.<id>]`.
    pub provider: String,
    /// Its `env_key`: the name of the variable holding the key.
    pub env_key: String,
}

/// The selected provider's `env_key` from `codex_home`'s `config.toml`, if it names one.
pub fn provider_key(codex_home: &Path) -> Option<ProviderKey> {
    let path = codex_home.join("config.toml");
    let mut text = String::new();
    let read = std::fs::File::open(&path)
        .and_then(|file| file.take(MAX_CONFIG_BYTES).read_to_string(&mut text));
    if let Err(error) = read {
        tracing::debug!(path = %path.display(), %error, "no Codex config to read a provider from");
        return None;
    }
    match text.parse::<DocumentMut>() {
        Ok(config) => selected_key(&config),
        Err(error) => {
            tracing::debug!(path = %path.display(), %error, "Codex config is not TOML");
            None
        }
    }
}

/// The profile's `model_provider`, else the top-level one, and that provider's `env_key`.
fn selected_key(config: &DocumentMut) -> Option<ProviderKey> {
    let root = config.as_item();
    let from_profile = text_at(root, "profile")
        .and_then(|profile| root.get("profiles")?.get(profile))
        .and_then(|profile| text_at(profile, "model_provider"));
    let provider = from_profile.or_else(|| text_at(root, "model_provider"))?;
    let env_key = root
        .get("model_providers")?
        .get(provider)
        .and_then(|entry| text_at(entry, "env_key"))?;
    Some(ProviderKey {
        provider: provider.to_owned(),
        env_key: env_key.to_owned(),
    })
}

/// A non-blank string under `key` of a table (or inline table).
fn text_at<'a>(table: &'a Item, key: &str) -> Option<&'a str> {
    table
        .get(key)?
        .as_str()
        .map(str::trim)
        .filter(|text| !text.is_empty())
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    fn key_of(config: &str) -> Option<ProviderKey> {
        let home = tempfile::tempdir().unwrap();
        std::fs::write(home.path().join("config.toml"), config).unwrap();
        provider_key(home.path())
    }

    fn key(provider: &str, env_key: &str) -> Option<ProviderKey> {
        Some(ProviderKey {
            provider: provider.into(),
            env_key: env_key.into(),
        })
    }

    #[test]
    fn the_top_level_provider_names_its_key() {
        assert_eq!(
            key_of(
                "model = \"m\"\nmodel_provider = \"acc\"\n\n[model_providers.acc]\nname = \
                 \"Acc\"\nbase_url = \"http://x/v1\"\nenv_key = \"ACC_KEY\"\n\n\
                 [model_providers.other]\nenv_key = \"OTHER_KEY\"\n"
            ),
            key("acc", "ACC_KEY")
        );
    }

    #[test]
    fn the_selected_profile_chooses_the_provider() {
        let config = "profile = \"work\"\nmodel_provider = \"home\"\n\
                      [profiles.work]\nmodel_provider = \"corp\"\n\
                      [profiles.play]\nmodel_provider = \"home\"\n\
                      [model_providers.home]\nenv_key = \"HOME_KEY\"\n\
                      [model_providers.corp]\nenv_key = \"CORP_KEY\"\n";
        assert_eq!(key_of(config), key("corp", "CORP_KEY"));
        // A profile that picks no provider keeps the top-level one; inline and dotted tables
        // read the same as headed ones.
        let config = "profile = \"quiet\"\nmodel_provider = \"home\"\n\
                      profiles = { quiet = { model = \"m\" } }\n\
                      model_providers.home.env_key = \"HOME_KEY\"\n";
        assert_eq!(key_of(config), key("home", "HOME_KEY"));
        // A profile that does not exist leaves the top-level choice.
        let config = "profile = \"gone\"\nmodel_provider = \"home\"\n\
                      [model_providers.home]\nenv_key = \"HOME_KEY\"\n";
        assert_eq!(key_of(config), key("home", "HOME_KEY"));
    }

    #[test]
    fn no_provider_no_key_or_a_bad_config_is_no_answer() {
        for config in [
            // The built-in provider: no `[model_providers]` entry.
            "model = \"gpt\"\n",
            "model_provider = \"openai\"\n",
            // The provider has no key variable, a blank one, or one that is not a string.
            "model_provider = \"x\"\n[model_providers.x]\nbase_url = \"http://x\"\n",
            "model_provider = \"x\"\n[model_providers.x]\nenv_key = \"  \"\n",
            "model_provider = \"x\"\n[model_providers.x]\nenv_key = 3\n",
            "model_provider = 3\n[model_providers.3]\nenv_key = \"K\"\n",
            // Not TOML at all.
            "model_provider = \"x\n[model_providers.x\nenv_key = \"K\"\n",
            "\u{0}\u{1}binary",
        ] {
            assert_eq!(key_of(config), None, "{config:?}");
        }
        let home = tempfile::tempdir().unwrap();
        assert_eq!(provider_key(home.path()), None, "no config.toml");
        std::fs::create_dir(home.path().join("config.toml")).unwrap();
        assert_eq!(
            provider_key(home.path()),
            None,
            "a folder named config.toml"
        );
    }
}
