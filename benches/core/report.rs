//! The report: a table on stdout and target/bench-core.json.

use crate::timing::Stats;
use serde_json::{json, Value as J};
use std::time::Duration;

pub struct Row {
    pub suite: &'static str,
    pub name: String,
    /// Headline value in `unit`.
    pub value: f64,
    pub unit: &'static str,
    pub p95: Option<f64>,
    pub samples: usize,
    pub target: Option<(f64, &'static str)>,
    pub note: String,
}

#[derive(Default)]
pub struct Report {
    pub rows: Vec<Row>,
}

pub fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

impl Report {
    pub fn time(
        &mut self,
        suite: &'static str,
        name: impl Into<String>,
        s: &Stats,
        unit: &'static str,
    ) {
        let conv = |d: Duration| if unit == "ms" { ms(d) } else { us(d) };
        self.rows.push(Row {
            suite,
            name: name.into(),
            value: conv(s.p50),
            unit,
            p95: Some(conv(s.p95)),
            samples: s.n,
            target: None,
            note: String::new(),
        });
        let r = self.rows.last().unwrap();
        eprintln!("  {:<58} {:>12.3} {}", r.name, r.value, r.unit);
    }
    pub fn value(
        &mut self,
        suite: &'static str,
        name: impl Into<String>,
        value: f64,
        unit: &'static str,
    ) {
        self.rows.push(Row {
            suite,
            name: name.into(),
            value,
            unit,
            p95: None,
            samples: 1,
            target: None,
            note: String::new(),
        });
        let r = self.rows.last().unwrap();
        eprintln!("  {:<58} {:>12.3} {}", r.name, r.value, r.unit);
    }
    /// Attach a target ("value must be below `max`") to the last row.
    pub fn target(&mut self, max: f64, text: &'static str) {
        self.rows.last_mut().unwrap().target = Some((max, text));
    }
    pub fn note(&mut self, note: impl Into<String>) {
        self.rows.last_mut().unwrap().note = note.into();
    }

    pub fn print(&self) {
        println!();
        println!(
            "{:<8} {:<58} {:>12} {:>12} {:<6} {:>6}  {:<18} met",
            "suite", "row", "p50/value", "p95", "unit", "n", "target"
        );
        println!("{}", "-".repeat(132));
        for r in &self.rows {
            let p95 = r.p95.map_or(String::new(), |x| format!("{x:.3}"));
            let (t, met) = match r.target {
                Some((max, text)) => (text.to_string(), if r.value < max { "yes" } else { "NO" }),
                None => (String::new(), ""),
            };
            println!(
                "{:<8} {:<58} {:>12.3} {:>12} {:<6} {:>6}  {:<18} {}",
                r.suite, r.name, r.value, p95, r.unit, r.samples, t, met
            );
            if !r.note.is_empty() {
                println!("{:<8}   ({})", "", r.note);
            }
        }
    }

    pub fn json(&self, config: J) -> J {
        let rows: Vec<J> = self
            .rows
            .iter()
            .map(|r| {
                json!({
                    "suite": r.suite,
                    "name": r.name,
                    "value": r.value,
                    "unit": r.unit,
                    "p95": r.p95,
                    "samples": r.samples,
                    "target": r.target.map(|(max, text)| json!({"below": max, "text": text})),
                    "met": r.target.map(|(max, _)| r.value < max),
                    "note": if r.note.is_empty() { J::Null } else { J::from(r.note.clone()) },
                })
            })
            .collect();
        json!({ "config": config, "rows": rows })
    }
}
