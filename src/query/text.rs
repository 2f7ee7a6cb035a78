//! Full-text search: the tokenizer (case- and accent-folding) and the search it parses; the
//! `text` index, an inverted index from terms to the items holding them, is `text_index.rs`.
//!
//! **Tokens.** A string is split into runs of alphanumeric characters (Unicode
//! `char::is_alphanumeric`, after folding); everything else separates. Folding: each character's
//! compatibility decomposition (NFKD) with combining marks dropped (so `é` → `e`, `ﬁ` → `fi`),
//! lowercase; a combining mark in the text itself is dropped. The decompositions come from a
//! table `build.rs` generates with the `unicode-normalization` crate (about 10k characters; Hangul
//! syllables are kept whole). ASCII text takes a fast path. This is what SQLite FTS5's
//! `unicode61 remove_diacritics 2` tokenizer does, up to Unicode-version details.
//!
//! **Matching** (`{"match": "buy mil"}`): every token of the search must occur in the value; the
//! last one may also be the prefix of a token (`mil` matches `milk`), so a search box matches as
//! the user types. A search of no token matches every string.
//!
//! **Ranking**: Okapi BM25 (k1 = 1.2, b = 0.75) summed over the search's tokens, with
//! idf = ln(1 + (N − df + 0.5)/(df + 0.5)) over the N indexed values; the prefix token scores as
//! the best of the terms it expands to.

use crate::error::{Error, Result};
use crate::value::Value;

// FOLD_KEYS, FOLD_OFFS, FOLD_TEXT: what each character with a folding folds to (build.rs).
include!(concat!(env!("OUT_DIR"), "/fold_table.rs"));

/// What `c` folds to when it is not just lowercased: its NFKD decomposition without combining
/// marks, lowercase (empty for a combining mark).
#[inline]
fn folding(c: char) -> Option<&'static str> {
    let i = FOLD_KEYS.binary_search(&(c as u32)).ok()?;
    Some(&FOLD_TEXT[FOLD_OFFS[i] as usize..FOLD_OFFS[i + 1] as usize])
}

fn bad(reason: String) -> Error {
    Error::InvalidQuery { reason }
}

/// Longest search string accepted, in bytes.
pub const MAX_SEARCH: usize = 1024;
/// Most tokens in a search.
pub const MAX_SEARCH_TOKENS: usize = 32;

/// Call `f` with each folded token of `s`. `buf` is scratch space.
pub fn for_each_token(s: &str, buf: &mut String, mut f: impl FnMut(&str)) {
    buf.clear();
    if s.is_ascii() {
        for &b in s.as_bytes() {
            if b.is_ascii_alphanumeric() {
                buf.push(b.to_ascii_lowercase() as char);
            } else if !buf.is_empty() {
                f(buf);
                buf.clear();
            }
        }
    } else {
        let mut one = |c: char, buf: &mut String| {
            if c.is_alphanumeric() {
                buf.extend(c.to_lowercase());
            } else if !buf.is_empty() {
                f(buf);
                buf.clear();
            }
        };
        for c in s.chars() {
            match folding(c) {
                Some(folded) => folded.chars().for_each(|d| one(d, buf)),
                None => one(c, buf),
            }
        }
    }
    if !buf.is_empty() {
        f(buf);
        buf.clear();
    }
}

/// The folded tokens of `s`.
pub fn tokens(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    for_each_token(s, &mut String::new(), |t| out.push(t.to_string()));
    out
}

/// A parsed search: the tokens that must occur, and the last one, which may be a prefix.
#[derive(Debug, Clone, PartialEq)]
pub struct Search {
    /// Distinct, in search order.
    pub exact: Vec<String>,
    pub prefix: Option<String>,
}

impl Search {
    /// Parse a search string; the error names the operator's field.
    pub fn parse(path: &str, s: &str) -> Result<Search> {
        if s.len() > MAX_SEARCH {
            return Err(bad(format!(
                "operator \"match\" on field {path:?}: a search string of {} bytes is longer \
                 than the {MAX_SEARCH} bytes a search can be",
                s.len()
            )));
        }
        let mut toks = tokens(s);
        if toks.len() > MAX_SEARCH_TOKENS {
            return Err(bad(format!(
                "operator \"match\" on field {path:?}: a search of {} words is more than the \
                 {MAX_SEARCH_TOKENS} a search can have",
                toks.len()
            )));
        }
        let prefix = toks.pop();
        let mut exact: Vec<String> = Vec::new();
        for t in toks {
            if !exact.contains(&t) {
                exact.push(t);
            }
        }
        Ok(Search { exact, prefix })
    }

    /// Whether the string `v` matches (the evaluation without an index).
    pub fn test(&self, v: Option<&Value>) -> bool {
        let Some(Value::String(s)) = v else {
            return false;
        };
        let mut found = vec![false; self.exact.len()];
        let mut pre = self.prefix.is_none();
        for_each_token(s, &mut String::new(), |t| {
            for (i, e) in self.exact.iter().enumerate() {
                if e == t {
                    found[i] = true;
                }
            }
            if let Some(p) = &self.prefix {
                pre |= t.starts_with(p.as_str());
            }
        });
        pre && found.iter().all(|f| *f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_fold_case_and_accents() {
        assert_eq!(
            tokens("Buy MILK, then crème-brûlée!"),
            ["buy", "milk", "then", "creme", "brulee"]
        );
        assert_eq!(
            tokens("Ｆｕｌｌ ﬁle Ǆ café"),
            ["full", "file", "dz", "cafe"]
        );
        assert_eq!(tokens("  --  "), Vec::<String>::new());
        assert_eq!(tokens("İstanbul Ångström"), ["istanbul", "angstrom"]);
    }

    #[test]
    fn search_parses_and_bounds() {
        let s = Search::parse("t", "Buy buy MIL").unwrap();
        assert_eq!(s.exact, ["buy"]);
        assert_eq!(s.prefix.as_deref(), Some("mil"));
        assert!(s.test(Some(&Value::from("buy milk"))));
        assert!(!s.test(Some(&Value::from("buy bread"))));
        assert!(!s.test(Some(&Value::from(3i64))));
        let e = Search::parse("t", &"a".repeat(1 << 20)).unwrap_err();
        assert!(e.to_string().contains("longer than the 1024 bytes"), "{e}");
        let many = "w ".repeat(40);
        let e = Search::parse("t", &many).unwrap_err();
        assert!(e.to_string().contains("40 words"), "{e}");
    }
}
