//! Where log lines go and what they look like: stderr, as text (colour
//! codes only when stderr is a terminal) or as one JSON object per line
//! (`log_format = "json"`), at the level `RUST_LOG` names (default `info`).
//! Each client's lines carry its session span: peer, user, database and
//! application_name.

use router::config::LogFormat;
use tracing::Subscriber;
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::EnvFilter;

/// A subscriber writing `format` lines to `writer`; `ansi` turns colour
/// codes on (text only). JSON lines are objects with the event's fields
/// and its span (`span`: a client's, with peer, user, database and
/// application_name), without the list of entered spans: a session's
/// lines name their span as parent without entering it (`listener/arrival.rs`), and
/// client spans do not nest.
///
/// `RUST_LOG` made of plain `target=level` directives (the usual case, and
/// the default `info`) becomes a [`Targets`] filter, which does nothing
/// when a span is entered or left; `EnvFilter` takes a read lock shared by
/// all threads on each, and every poll of a client's task enters its
/// session span. Directives only `EnvFilter` knows (span and field
/// filters) still get it.
pub fn subscriber<W>(format: LogFormat, ansi: bool, writer: W) -> Box<dyn Subscriber + Send + Sync>
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    let directives = std::env::var("RUST_LOG").unwrap_or_else(|_| "info".to_owned());
    let builder = tracing_subscriber::fmt()
        .with_max_level(LevelFilter::TRACE)
        .with_writer(writer);
    let targets = directives.parse::<Targets>().ok();
    match targets.filter(|_| !directives.trim().is_empty()) {
        Some(targets) => match format {
            LogFormat::Text => Box::new(builder.with_ansi(ansi).finish().with(targets)),
            LogFormat::Json => Box::new(
                builder
                    .json()
                    .with_span_list(false)
                    .with_ansi(false)
                    .finish()
                    .with(targets),
            ),
        },
        None => {
            let filter = EnvFilter::try_new(&directives).unwrap_or_else(|_| EnvFilter::new("info"));
            let builder = builder.with_env_filter(filter);
            match format {
                LogFormat::Text => Box::new(builder.with_ansi(ansi).finish()),
                LogFormat::Json => Box::new(
                    builder
                        .json()
                        .with_span_list(false)
                        .with_ansi(false)
                        .finish(),
                ),
            }
        }
    }
}

/// Install the process's subscriber: `format` lines on stderr.
pub fn init(format: LogFormat) -> Result<(), tracing::subscriber::SetGlobalDefaultError> {
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    tracing::subscriber::set_global_default(subscriber(format, ansi, std::io::stderr))
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    /// A writer into a shared buffer.
    #[derive(Clone, Default)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Buffer {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn lines(format: LogFormat, ansi: bool) -> String {
        let buffer = Buffer::default();
        let writer = buffer.clone();
        let subscriber = subscriber(format, ansi, move || writer.clone());
        tracing::subscriber::with_default(subscriber, || {
            let span = tracing::info_span!("client", user = "app", database = "prod");
            let _entered = span.enter();
            tracing::info!(route = "one", "slow query");
        });
        let bytes = buffer.0.lock().unwrap().clone();
        String::from_utf8(bytes).unwrap()
    }

    #[test]
    fn text_has_colour_codes_only_when_asked() {
        let plain = lines(LogFormat::Text, false);
        assert!(plain.contains("slow query"), "{plain}");
        assert!(!plain.contains('\u{1b}'), "{plain:?}");
        assert!(lines(LogFormat::Text, true).contains('\u{1b}'));
    }

    #[test]
    fn json_lines_carry_the_event_and_its_span() {
        let out = lines(LogFormat::Json, true);
        assert!(!out.contains('\u{1b}'), "{out:?}");
        let line: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
        assert_eq!(line["fields"]["message"], "slow query");
        assert_eq!(line["fields"]["route"], "one");
        assert_eq!(line["span"]["user"], "app");
        assert_eq!(line["span"]["database"], "prod");
        assert_eq!(line["level"], "INFO");
        assert!(line.get("spans").is_none(), "{line}");
    }

    #[test]
    fn a_line_naming_its_span_as_parent_carries_it_in_both_formats() {
        // What a session does: its span is never entered.
        let emit = |format| {
            let buffer = Buffer::default();
            let writer = buffer.clone();
            let subscriber = subscriber(format, false, move || writer.clone());
            tracing::subscriber::with_default(subscriber, || {
                let span = tracing::info_span!("client", user = "app", database = "prod");
                tracing::info!(parent: &span, "slow query");
            });
            let bytes = buffer.0.lock().unwrap().clone();
            String::from_utf8(bytes).unwrap()
        };
        let json: serde_json::Value = serde_json::from_str(emit(LogFormat::Json).trim()).unwrap();
        assert_eq!(json["span"]["user"], "app");
        assert_eq!(json["span"]["database"], "prod");
        let text = emit(LogFormat::Text);
        assert!(
            text.contains("client{user=\"app\" database=\"prod\"}"),
            "{text}"
        );
        assert!(text.contains("slow query"), "{text}");
    }
}
