//! Structured log lines on stderr: `ts=<unix seconds> event=<name> key=value ...`, one line
//! per connection open and close, per refusal, per repository open, close and failure.

use crate::log_limit;
use std::fmt::Display;
use std::io::Write;
use std::net::IpAddr;
use std::time::{SystemTime, UNIX_EPOCH};

/// A line about what a client at `ip` did: written only within that address's log budget
/// (`log_limit`), so no client can make the log grow faster than a few lines a second.
pub fn event_about(ip: IpAddr, name: &str, fields: &[(&str, &dyn Display)]) {
    if log_limit::allow(ip) {
        event(name, fields);
    }
}

/// Write one line: `ts=… event=… k=v …`. Values with spaces, quotes or `=` are quoted;
/// each is cut to `log_limit::MAX_VALUE` characters.
pub fn event(name: &str, fields: &[(&str, &dyn Display)]) {
    let ts = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0);
    let mut line = format!("ts={ts:.3} event={name}");
    for (k, v) in fields {
        line.push(' ');
        line.push_str(k);
        line.push('=');
        line.push_str(&quote(&log_limit::cut(&v.to_string())));
    }
    line.push('\n');
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

fn quote(v: &str) -> String {
    let plain = !v.is_empty()
        && v.chars()
            .all(|c| !c.is_whitespace() && c != '"' && c != '=' && !c.is_control());
    if plain {
        return v.to_string();
    }
    let mut s = String::from("\"");
    for c in v.chars() {
        match c {
            '"' => s.push_str("\\\""),
            '\\' => s.push_str("\\\\"),
            '\n' => s.push_str("\\n"),
            c if c.is_control() => s.push(' '),
            c => s.push(c),
        }
    }
    s.push('"');
    s
}

#[cfg(test)]
mod tests {
    #[test]
    fn values_are_quoted_when_needed() {
        assert_eq!(super::quote("127.0.0.1:5"), "127.0.0.1:5");
        assert_eq!(super::quote("a b \"c\""), "\"a b \\\"c\\\"\"");
        assert_eq!(super::quote(""), "\"\"");
    }
}
