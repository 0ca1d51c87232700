//! `fake-llm`: the scripted fake OpenAI-compatible server, by hand — for manual runs of
//! `evolve` and for benchmarks against an instant model.
//!
//! ```text
//! fake-llm [--port P] [--script FILE.json] [--echo] [--repeat-tool-headers] [--chunk-delay-ms N]
//! ```
//! Prints the base URL (`http://127.0.0.1:P/v1`) on stdout, then serves until killed.
//! `--script` queues replies (see `Reply::from_json`); `--echo` answers every unscripted
//! request with `echo: ` and the last user message (otherwise `ok`). Evolve's background
//! prompts (`[evolve:post]`, …) answer from the script's `routes` or the fallback,
//! never from the conversation's replies.

use std::process::ExitCode;
use std::time::Duration;

use evolve_fake_llm::{FakeLlm, Reply};

/// The markers that start Evolve's background prompts (mini/src/agents/prompts.rs).
const EVOLVE_MARKERS: [&str; 9] = [
    "[evolve:post]",
    "[evolve:classify]",
    "[evolve:reflect]",
    "[evolve:style]",
    "[evolve:summarize]",
    "[evolve:crystallize]",
    "[evolve:lesson]",
    "[evolve:priority]",
    "[evolve:digest]",
];

const USAGE: &str = "usage: fake-llm [--port P] [--script FILE.json] [--echo] \
                     [--repeat-tool-headers] [--chunk-delay-ms N]";

struct Args {
    port: u16,
    script: Option<String>,
    echo: bool,
    repeat_tool_headers: bool,
    chunk_delay: Duration,
}

fn parse(mut args: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut out = Args {
        port: 0,
        script: None,
        echo: false,
        repeat_tool_headers: false,
        chunk_delay: Duration::ZERO,
    };
    while let Some(a) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value"));
        match a.as_str() {
            "--port" => {
                let v = value("--port")?;
                out.port = v.parse().map_err(|_| format!("--port {v}: not a port"))?;
            }
            "--script" => out.script = Some(value("--script")?),
            "--echo" => out.echo = true,
            "--repeat-tool-headers" => out.repeat_tool_headers = true,
            "--chunk-delay-ms" => {
                let v = value("--chunk-delay-ms")?;
                let ms = v
                    .parse()
                    .map_err(|_| format!("--chunk-delay-ms {v}: not a number"))?;
                out.chunk_delay = Duration::from_millis(ms);
            }
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(out)
}

fn main() -> ExitCode {
    let args = match parse(std::env::args().skip(1)) {
        Ok(a) => a,
        Err(e) if e.is_empty() => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("fake-llm: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let fake = match FakeLlm::start_on(args.port) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("fake-llm: cannot listen on 127.0.0.1:{}: {e}", args.port);
            return ExitCode::from(1);
        }
    };
    if args.echo {
        fake.set_fallback(Reply::Echo);
    }
    fake.repeat_tool_headers(args.repeat_tool_headers);
    fake.set_chunk_delay(args.chunk_delay);
    // Evolve's background prompts (memory extraction, evaluation, …) never take the
    // replies scripted for the conversation; a script's "routes" can still answer them.
    for marker in EVOLVE_MARKERS {
        fake.quiet(marker);
    }
    // The call after an answer (title, grade, memories, tool-chain review) answers
    // `{}` unless the script routes "[evolve:post]": no title (an echo would be a poor
    // one), so sessions keep their question as the title.
    fake.quiet_with("[evolve:post]", Reply::text("{}"));
    if let Some(path) = &args.script {
        let loaded = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {path}: {e}"))
            .and_then(|text| {
                serde_json::from_str(&text).map_err(|e| format!("{path} is not JSON: {e}"))
            })
            .and_then(|script| {
                fake.load_script(&script)
                    .map_err(|e| format!("{path}: {e}"))
            });
        if let Err(e) = loaded {
            eprintln!("fake-llm: {e}");
            return ExitCode::from(2);
        }
    }
    println!("{}", fake.base_url());
    loop {
        std::thread::park();
    }
}
