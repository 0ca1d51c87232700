//! `[model]`: the server, the key, the model names, the window and the timeouts, from the
//! file and the environment (`OPENAI_BASE_URL`, `OPENAI_API_KEY`, `EVOLVE_MODEL`,
//! `EVOLVE_CHEAP_MODEL`), each value checked with a message naming its key.

use super::context::{check_base_url, Context};
use super::file::{RawModel, RawTimeouts};
use super::{
    ConfigError, IgnoredEnv, ModelConfig, Origin, Overridden, Price, Spending, Timeouts,
    ToolCalling, Transcription, DEFAULT_BASE_URL,
};
use crate::secret::Secret;

/// `[model] daily_tokens` and the prices per million tokens: what the models' work may
/// use in a day, and what it costs.
fn resolve_spending(
    daily_tokens: Option<u64>,
    prices: [(Option<f64>, &'static str); 4],
    ctx: &Context<'_>,
) -> Result<Spending, ConfigError> {
    if daily_tokens == Some(0) {
        return Err(ctx.invalid(format!(
            "model.daily_tokens = 0{}: at least 1 token a day (leave it out for no limit)",
            ctx.source_note("model.daily_tokens")
        )));
    }
    for (price, key) in prices {
        if let Some(p) = price.filter(|p| !p.is_finite() || *p < 0.0) {
            return Err(ctx.invalid(format!(
                "model.{key} = {p}{}: a price per million tokens is a number of 0 or more",
                ctx.source_note(&format!("model.{key}"))
            )));
        }
    }
    let [(main_in, _), (main_out, _), (cheap_in, _), (cheap_out, _)] = prices;
    let price = |i: Option<f64>, o: Option<f64>| {
        (i.is_some() || o.is_some()).then(|| Price {
            in_per_mtok: i.unwrap_or(0.0),
            out_per_mtok: o.unwrap_or(0.0),
        })
    };
    let main = price(main_in, main_out);
    Ok(Spending {
        daily_tokens,
        main,
        cheap: price(cheap_in, cheap_out).or(main),
    })
}

pub(super) fn resolve_model(
    raw: RawModel,
    ctx: &mut Context<'_>,
) -> Result<(ModelConfig, Spending), ConfigError> {
    let RawModel {
        base_url,
        api_key,
        api_key_env,
        main,
        cheap,
        embedding_model,
        transcription_model,
        transcription_base_url,
        transcription_api_key,
        transcription_api_key_env,
        context_window,
        reserved_output,
        max_answer_bytes,
        stream,
        temperature,
        tools,
        max_retries,
        timeouts,
        daily_tokens,
        price_in_per_mtok,
        price_out_per_mtok,
        cheap_price_in_per_mtok,
        cheap_price_out_per_mtok,
    } = raw;
    let d = ModelConfig::default();
    let spending = resolve_spending(
        daily_tokens,
        [
            (price_in_per_mtok, "price_in_per_mtok"),
            (price_out_per_mtok, "price_out_per_mtok"),
            (cheap_price_in_per_mtok, "cheap_price_in_per_mtok"),
            (cheap_price_out_per_mtok, "cheap_price_out_per_mtok"),
        ],
        ctx,
    )?;

    let (base_url, base_url_is_default) =
        match ctx.env_setting("OPENAI_BASE_URL", "model.base_url", &[])? {
            Some(url) => {
                ctx.origins
                    .set("model.base_url", Origin::Env("OPENAI_BASE_URL".into()));
                let url = check_base_url(&url).map_err(|message| ConfigError::Env {
                    var: "OPENAI_BASE_URL",
                    message: format!("is `{url}`: {message}"),
                })?;
                (url, false)
            }
            None => match base_url {
                Some(url) => {
                    let checked = check_base_url(&url).map_err(|m| {
                        ctx.invalid_key(
                            "model.base_url",
                            format!(
                                "model.base_url = \"{url}\"{}: {m}",
                                ctx.source_note("model.base_url")
                            ),
                        )
                    })?;
                    (checked, false)
                }
                None => (DEFAULT_BASE_URL.to_string(), true),
            },
        };

    let api_key = match env_key(ctx)? {
        Some(key) => {
            ctx.origins
                .set("model.api_key", Origin::Env("OPENAI_API_KEY".into()));
            Some(Secret::new(key))
        }
        None => match (api_key, api_key_env) {
            (Some(_), Some(_)) => {
                return Err(ctx.invalid_key(
                    "model.api_key",
                    format!(
                        "model.api_key and model.api_key_env are both set{} — keep one",
                        ctx.source_note("model.api_key")
                    ),
                ))
            }
            (Some(key), None) => Some(Secret::new(key.trim())).filter(|k| !k.is_empty()),
            (None, Some(var)) => {
                let value = (ctx.env)(var.trim()).and_then(|v| v.into_string().ok());
                match value
                    .map(|v| v.trim().to_string())
                    .filter(|v| !v.is_empty())
                {
                    Some(key) => {
                        ctx.origins
                            .set("model.api_key", Origin::Env(var.trim().to_string()));
                        Some(Secret::new(key))
                    }
                    None => {
                        return Err(ctx.invalid_key(
                            "model.api_key_env",
                            format!(
                                "model.api_key_env = \"{var}\"{} names an environment variable \
                             that is not set (or not UTF-8) — export {var}=… or set \
                             model.api_key instead",
                                ctx.source_note("model.api_key_env")
                            ),
                        ))
                    }
                }
            }
            (None, None) => None,
        },
    };
    let main = match ctx.env_setting("EVOLVE_MODEL", "model.main", &[])? {
        Some(name) => {
            ctx.origins
                .set("model.main", Origin::Env("EVOLVE_MODEL".into()));
            name
        }
        None => model_name(ctx, "model.main", main)?.unwrap_or(d.main),
    };
    let cheap = match ctx.env_setting("EVOLVE_CHEAP_MODEL", "model.cheap", &[])? {
        Some(name) => {
            ctx.origins
                .set("model.cheap", Origin::Env("EVOLVE_CHEAP_MODEL".into()));
            name
        }
        None => match model_name(ctx, "model.cheap", cheap)? {
            Some(name) => name,
            None => {
                ctx.origins.set("model.cheap", Origin::Main);
                main.clone()
            }
        },
    };

    let embedding_model = model_name(ctx, "model.embedding_model", embedding_model)?;
    let transcription = resolve_transcription(
        RawTranscription {
            model: transcription_model,
            base_url: transcription_base_url,
            api_key: transcription_api_key,
            api_key_env: transcription_api_key_env,
        },
        (&base_url, api_key.as_ref()),
        ctx,
    )?;

    let context_window = context_window.unwrap_or(d.context_window);
    let reserved_output = reserved_output.unwrap_or(d.reserved_output);
    if reserved_output == 0 || reserved_output >= context_window {
        return Err(ctx.invalid_key(
            "model.reserved_output",
            format!(
                "model.reserved_output = {reserved_output}{} must be at least 1 and below \
             model.context_window = {context_window}{} — it is the part of the window kept \
             for the answer",
                ctx.source_note("model.reserved_output"),
                ctx.source_note("model.context_window"),
            ),
        ));
    }
    let min_window = reserved_output + evolve_core::history::MIN_INPUT_BUDGET;
    if reserved_output > 0 && context_window < min_window {
        return Err(ctx.invalid_key(
            "model.context_window",
            format!(
                "model.context_window = {context_window}{} leaves no room for the question: it \
             must be at least model.reserved_output + {} = {min_window} tokens",
                ctx.source_note("model.context_window"),
                evolve_core::history::MIN_INPUT_BUDGET,
            ),
        ));
    }
    let max_answer_bytes = max_answer_bytes.unwrap_or(d.max_answer_bytes);
    if !super::MAX_ANSWER_BYTES_RANGE.contains(&max_answer_bytes) {
        return Err(ctx.invalid_key(
            "model.max_answer_bytes",
            format!(
                "model.max_answer_bytes = {max_answer_bytes}{} must be between {} (4 KiB) and \
             {} (16 MiB) — it is the largest answer, in bytes, kept from the model",
                ctx.source_note("model.max_answer_bytes"),
                super::MAX_ANSWER_BYTES_RANGE.start(),
                super::MAX_ANSWER_BYTES_RANGE.end(),
            ),
        ));
    }
    if let Some(t) = temperature {
        if !(0.0..=2.0).contains(&t) {
            return Err(ctx.invalid_key(
                "model.temperature",
                format!(
                    "model.temperature = {t}{} must be between 0 and 2 (or removed for the \
                 server's default)",
                    ctx.source_note("model.temperature")
                ),
            ));
        }
    }

    let tools = match tools {
        None => d.tools,
        Some(text) => ToolCalling::parse(&text).ok_or_else(|| {
            ctx.invalid_key(
                "model.tools",
                format!(
                    "model.tools = \"{text}\"{} must be one of {} — \"auto\" uses the model's \
                 native tool calling and falls back to describing the tools in the prompt \
                 when the server says the model has none",
                    ctx.source_note("model.tools"),
                    ToolCalling::NAMES.join(", "),
                ),
            )
        })?,
    };

    let RawTimeouts {
        connect,
        first_byte,
        per_read,
        overall,
    } = timeouts.unwrap_or_default();
    let timeouts = Timeouts {
        connect: ctx.seconds("model.timeouts.connect", connect, d.timeouts.connect)?,
        first_byte: ctx.seconds(
            "model.timeouts.first_byte",
            first_byte,
            d.timeouts.first_byte,
        )?,
        per_read: ctx.seconds("model.timeouts.per_read", per_read, d.timeouts.per_read)?,
        overall: ctx.seconds("model.timeouts.overall", overall, d.timeouts.overall)?,
    };

    let model = ModelConfig {
        base_url,
        base_url_is_default,
        api_key,
        main,
        cheap,
        embedding_model,
        transcription,
        context_window,
        reserved_output,
        max_answer_bytes,
        timeouts,
        max_retries: max_retries.unwrap_or(d.max_retries),
        stream: stream.unwrap_or(d.stream),
        temperature,
        tools,
        tools_learned_file: Some(ctx.home.join(super::TOOLS_LEARNED_FILE)),
    };
    Ok((model, spending))
}

/// The `transcription_*` keys of `[model]`, as written.
struct RawTranscription {
    model: Option<String>,
    base_url: Option<String>,
    api_key: Option<String>,
    api_key_env: Option<String>,
}

/// `[model] transcription_model` and its server: `transcription_base_url`, else the
/// model server's; `transcription_api_key` (or `_env`), else the model's key — but only
/// when the server is the model's own, so a key never reaches a server it was not given
/// for. The server and key without a model are refused: they would do nothing.
fn resolve_transcription(
    raw: RawTranscription,
    (model_url, model_key): (&str, Option<&Secret>),
    ctx: &mut Context<'_>,
) -> Result<Option<Transcription>, ConfigError> {
    let RawTranscription {
        model,
        base_url,
        api_key,
        api_key_env,
    } = raw;
    let model = model_name(ctx, "model.transcription_model", model)?;
    let Some(model) = model else {
        let set = [
            ("transcription_base_url", base_url.is_some()),
            ("transcription_api_key", api_key.is_some()),
            ("transcription_api_key_env", api_key_env.is_some()),
        ];
        if let Some((key, _)) = set.iter().find(|(_, set)| *set) {
            let dotted = format!("model.{key}");
            return Err(ctx.invalid_key(
                &dotted,
                format!(
                    "{dotted} is set{} but model.transcription_model is not — name the \
                     speech-to-text model (e.g. transcription_model = \"whisper-1\") or \
                     remove the key",
                    ctx.source_note(&dotted)
                ),
            ));
        }
        return Ok(None);
    };
    let base_url = match base_url {
        Some(url) => check_base_url(&url).map_err(|m| {
            ctx.invalid_key(
                "model.transcription_base_url",
                format!(
                    "model.transcription_base_url = \"{url}\"{}: {m}",
                    ctx.source_note("model.transcription_base_url")
                ),
            )
        })?,
        None => model_url.to_string(),
    };
    let api_key = match (api_key, api_key_env) {
        (Some(_), Some(_)) => {
            return Err(ctx.invalid_key(
                "model.transcription_api_key",
                format!(
                    "model.transcription_api_key and model.transcription_api_key_env are both \
                     set{} — keep one",
                    ctx.source_note("model.transcription_api_key")
                ),
            ))
        }
        (Some(key), None) => Some(Secret::new(key.trim())).filter(|k| !k.is_empty()),
        (None, Some(var)) => {
            let value = (ctx.env)(var.trim())
                .and_then(|v| v.into_string().ok())
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty());
            match value {
                Some(key) => Some(Secret::new(key)),
                None => {
                    return Err(ctx.invalid_key(
                        "model.transcription_api_key_env",
                        format!(
                            "model.transcription_api_key_env = \"{var}\"{} names an environment \
                             variable that is not set (or not UTF-8) — export {var}=… or set \
                             model.transcription_api_key instead",
                            ctx.source_note("model.transcription_api_key_env")
                        ),
                    ))
                }
            }
        }
        (None, None) if base_url == model_url => model_key.cloned(),
        (None, None) => None,
    };
    Ok(Some(Transcription {
        model,
        base_url,
        api_key,
    }))
}

/// `OPENAI_API_KEY`, unless the profile the user named sets its own key, or its own
/// server without a key: a key exported for the environment's server is not sent to
/// another one (the profile sends it with `api_key_env = "OPENAI_API_KEY"`).
pub(super) fn env_key(ctx: &mut Context<'_>) -> Result<Option<String>, ConfigError> {
    let key = ctx.env_setting("OPENAI_API_KEY", "model.api_key", &["model.api_key_env"])?;
    if key.is_some() && ctx.named_sets("model.base_url") {
        ctx.ignored_env.push(IgnoredEnv {
            var: "OPENAI_API_KEY",
            profile: ctx.profile.to_string(),
            why: Overridden::KeyOfAnotherServer,
        });
        return Ok(None);
    }
    Ok(key)
}

/// A model name from the file: trimmed, not empty.
pub(super) fn model_name(
    ctx: &Context<'_>,
    key: &str,
    value: Option<String>,
) -> Result<Option<String>, ConfigError> {
    match value {
        Some(name) if name.trim().is_empty() => Err(ctx.invalid_key(
            key,
            format!(
                "{key} is empty{} — name a model or remove the key",
                ctx.source_note(key)
            ),
        )),
        Some(name) => Ok(Some(name.trim().to_string())),
        None => Ok(None),
    }
}
