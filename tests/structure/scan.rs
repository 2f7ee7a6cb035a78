//! Reading a crate's module tree and the paths its sources name, without a Rust parser: comments
//! and literals are blanked out, the rest is cut into identifiers, `::` and single characters.
//! That is enough for `mod x;`, `use` trees and `crate::`/`super::`/`self::` paths, which is all
//! the structure check needs.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

/// A module's path from its crate root (`[]` is the root, `["sync", "wire"]` is `sync::wire`).
pub type ModPath = Vec<String>;

/// One path a source names, made absolute from the crate root, and where.
pub struct Reference {
    pub path: ModPath,
    pub line: usize,
}

/// One module file: its path, its `use` imports (name → absolute path; `None` for a name from
/// another crate) and every path it names.
pub struct Module {
    pub file: PathBuf,
    pub imports: BTreeMap<String, Option<ModPath>>,
    pub references: Vec<Reference>,
}

/// A crate: its module files by module path.
pub struct Crate {
    pub name: String,
    pub modules: BTreeMap<ModPath, Module>,
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    PathSep,
    Punct(char),
}

struct Token {
    tok: Tok,
    line: usize,
}

impl Crate {
    /// Read the crate whose root file is `base/root` (`src/lib.rs`, `src/main.rs`, ...); file
    /// names are kept relative to `base`.
    pub fn read(name: &str, base: &Path, root: &Path) -> Crate {
        let mut krate = Crate {
            name: name.to_string(),
            modules: BTreeMap::new(),
        };
        let dir = root
            .parent()
            .expect("a root file has a folder")
            .to_path_buf();
        krate.read_module(Vec::new(), base, root, &dir);
        krate
    }

    /// Read one module file and, recursively, the files of the modules it declares. `dir` is
    /// the folder its child modules' files are in.
    fn read_module(&mut self, path: ModPath, base: &Path, file: &Path, dir: &Path) {
        let raw = fs::read_to_string(base.join(file))
            .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let tokens = tokenize(&raw);
        let mut scan = Scan {
            here: path.clone(),
            inline: Vec::new(),
            depth: 0,
            imports: BTreeMap::new(),
            references: Vec::new(),
            children: Vec::new(),
        };
        scan.run(&tokens, &path_attributes(&raw));
        self.modules.insert(
            path.clone(),
            Module {
                file: file.to_path_buf(),
                imports: scan.imports,
                references: scan.references,
            },
        );
        for (child, explicit) in scan.children {
            let child_file = match &explicit {
                Some(p) => dir.join(p),
                None => {
                    let flat = dir.join(format!("{child}.rs"));
                    if base.join(&flat).exists() {
                        flat
                    } else {
                        dir.join(&child).join("mod.rs")
                    }
                }
            };
            let child_dir = if child_file.ends_with("mod.rs") || explicit.is_some() {
                child_file.parent().unwrap().to_path_buf()
            } else {
                dir.join(&child)
            };
            let mut child_path = path.clone();
            child_path.push(child);
            self.read_module(child_path, base, &child_file, &child_dir);
        }
    }
}

/// `#[path = "..."]` attributes by the line they are on (read before literals are blanked).
fn path_attributes(raw: &str) -> BTreeMap<usize, String> {
    let mut out = BTreeMap::new();
    for (i, line) in raw.lines().enumerate() {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("#[path = \"") {
            if let Some(end) = rest.find('"') {
                out.insert(i + 1, rest[..end].to_string());
            }
        }
    }
    out
}

/// The state of one file's scan.
struct Scan {
    /// The file's module path.
    here: ModPath,
    /// Inline modules (`mod tests { ... }`) open at this point, with the depth of their `{`.
    inline: Vec<(String, usize)>,
    depth: usize,
    imports: BTreeMap<String, Option<ModPath>>,
    references: Vec<Reference>,
    /// Declared child modules (`mod x;`) with their `#[path]`, if any.
    children: Vec<(String, Option<String>)>,
}

impl Scan {
    fn run(&mut self, t: &[Token], attrs: &BTreeMap<usize, String>) {
        self.declared_children(t, attrs);
        let mut i = 0;
        while i < t.len() {
            i = match &t[i].tok {
                Tok::Ident(w) if w == "mod" => self.module(t, i),
                Tok::Ident(w) if w == "use" => self.use_item(t, i),
                Tok::Ident(w)
                    if is_path_start(w)
                        && at(t, i + 1) == Some(&Tok::PathSep)
                        && (i == 0 || t[i - 1].tok != Tok::PathSep) =>
                {
                    self.inline_path(t, i)
                }
                Tok::Punct('{') => {
                    self.depth += 1;
                    i + 1
                }
                Tok::Punct('}') => {
                    self.depth = self.depth.saturating_sub(1);
                    if self.inline.last().is_some_and(|(_, d)| *d == self.depth) {
                        self.inline.pop();
                    }
                    i + 1
                }
                _ => i + 1,
            };
        }
    }

    /// The module the code at this point is in (the file's, plus open inline modules).
    fn current(&self) -> ModPath {
        let mut p = self.here.clone();
        p.extend(self.inline.iter().map(|(n, _)| n.clone()));
        p
    }

    /// The child files (`mod name;`, with a `#[path]` on the line or two before), found first
    /// so that a `use` above the `mod` line sees them.
    fn declared_children(&mut self, t: &[Token], attrs: &BTreeMap<usize, String>) {
        for (i, x) in t.iter().enumerate() {
            if let (Tok::Ident(m), Some(Tok::Ident(name)), Some(Tok::Punct(';'))) =
                (&x.tok, at(t, i + 1), at(t, i + 2))
            {
                if m == "mod" {
                    let explicit = (x.line.saturating_sub(2)..=x.line)
                        .rev()
                        .find_map(|l| attrs.get(&l).cloned());
                    self.children.push((name.clone(), explicit));
                }
            }
        }
    }

    /// `mod name;` (a child file, see `declared_children`) or `mod name {` (an inline module).
    fn module(&mut self, t: &[Token], i: usize) -> usize {
        let (Some(Tok::Ident(name)), Some(next)) = (at(t, i + 1), at(t, i + 2)) else {
            return i + 1;
        };
        match next {
            Tok::Punct(';') => i + 3,
            Tok::Punct('{') => {
                self.inline.push((name.clone(), self.depth));
                self.depth += 1;
                i + 3
            }
            _ => i + 1,
        }
    }

    /// A `use` tree up to its `;`.
    fn use_item(&mut self, t: &[Token], i: usize) -> usize {
        let end = (i..t.len())
            .find(|&j| t[j].tok == Tok::Punct(';'))
            .unwrap_or(t.len());
        let line = t[i].line;
        let mut leaves = Vec::new();
        use_tree(&t[i + 1..end], Vec::new(), &mut leaves);
        let top = self.inline.is_empty();
        for (segments, alias) in leaves {
            let abs = self.absolute(&segments);
            if let Some(p) = &abs {
                self.references.push(Reference {
                    path: p.clone(),
                    line,
                });
            }
            if let (true, Some(alias)) = (top, alias) {
                self.imports.insert(alias, abs);
            }
        }
        end + 1
    }

    /// `crate::a::b`, `super::x`, `self::y` in code.
    fn inline_path(&mut self, t: &[Token], i: usize) -> usize {
        let mut segments = Vec::new();
        let mut j = i;
        while let Some(Tok::Ident(w)) = at(t, j) {
            segments.push(w.clone());
            if at(t, j + 1) == Some(&Tok::PathSep) {
                j += 2;
            } else {
                j += 1;
                break;
            }
        }
        if let Some(p) = self.absolute(&segments) {
            self.references.push(Reference {
                path: p,
                line: t[i].line,
            });
        }
        j
    }

    /// A path as written here, made absolute; `None` for another crate's.
    fn absolute(&self, segments: &[String]) -> Option<ModPath> {
        let mut base = self.current();
        let mut rest = segments;
        match rest.first().map(String::as_str) {
            Some("crate") | Some("$crate") => {
                base.clear();
                rest = &rest[1..];
            }
            Some("self") => rest = &rest[1..],
            Some("super") => {
                while rest.first().map(String::as_str) == Some("super") {
                    base.pop();
                    rest = &rest[1..];
                }
            }
            // A name declared as a child module here (2018 paths are relative to the module).
            Some(first) if self.children.iter().any(|(c, _)| c == first) => {}
            _ => return None,
        }
        base.extend(rest.iter().filter(|s| *s != "self").cloned());
        Some(base)
    }
}

fn is_path_start(w: &str) -> bool {
    matches!(w, "crate" | "$crate" | "super" | "self")
}

fn at(t: &[Token], i: usize) -> Option<&Tok> {
    t.get(i).map(|x| &x.tok)
}

/// Expand a `use` tree into its leaves: (segments, the name it brings into scope). A glob
/// (`*`) brings no single name.
fn use_tree(t: &[Token], prefix: Vec<String>, out: &mut Vec<(Vec<String>, Option<String>)>) {
    let mut path = prefix;
    let mut i = 0;
    while i < t.len() {
        match &t[i].tok {
            Tok::Ident(w) if w == "as" => {
                if let Some(Tok::Ident(alias)) = at(t, i + 1) {
                    out.push((path.clone(), Some(alias.clone())));
                }
                return;
            }
            Tok::Ident(w) => path.push(w.clone()),
            Tok::PathSep => {}
            Tok::Punct('*') => {
                out.push((path, None));
                return;
            }
            Tok::Punct('{') => {
                let close = matching(t, i);
                for part in split_top(&t[i + 1..close]) {
                    use_tree(part, path.clone(), out);
                }
                return;
            }
            _ => {}
        }
        i += 1;
    }
    let name = match path.last().map(String::as_str) {
        Some("self") => path.iter().rev().nth(1).cloned(),
        other => other.map(str::to_string),
    };
    if !path.is_empty() {
        out.push((path, name));
    }
}

/// The index of the `}` matching the `{` at `open`.
fn matching(t: &[Token], open: usize) -> usize {
    let mut depth = 0;
    for (j, x) in t.iter().enumerate().skip(open) {
        match x.tok {
            Tok::Punct('{') => depth += 1,
            Tok::Punct('}') => {
                depth -= 1;
                if depth == 0 {
                    return j;
                }
            }
            _ => {}
        }
    }
    t.len()
}

/// Split a brace group's contents at its top-level commas.
fn split_top(t: &[Token]) -> Vec<&[Token]> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (j, x) in t.iter().enumerate() {
        match x.tok {
            Tok::Punct('{') => depth += 1,
            Tok::Punct('}') => depth -= 1,
            Tok::Punct(',') if depth == 0 => {
                parts.push(&t[start..j]);
                start = j + 1;
            }
            _ => {}
        }
    }
    parts.push(&t[start..]);
    parts.retain(|p| !p.is_empty());
    parts
}

/// Cut source text into tokens, skipping comments and literals.
fn tokenize(src: &str) -> Vec<Token> {
    let c: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    while i < c.len() {
        let ch = c[i];
        let start_line = line;
        let next = skip_trivia(&c, i, &mut line);
        if next != i {
            i = next;
            continue;
        }
        if ch.is_alphabetic() || ch == '_' || ch == '$' {
            let mut j = i + 1;
            while j < c.len() && (c[j].is_alphanumeric() || c[j] == '_') {
                j += 1;
            }
            let word: String = c[i..j].iter().collect();
            // `r#ident` (a raw identifier) is the identifier.
            let word = word.strip_prefix("r#").map(str::to_string).unwrap_or(word);
            out.push(Token {
                tok: Tok::Ident(word),
                line: start_line,
            });
            i = j;
        } else if ch == ':' && c.get(i + 1) == Some(&':') {
            out.push(Token {
                tok: Tok::PathSep,
                line,
            });
            i += 2;
        } else {
            if !ch.is_whitespace() {
                out.push(Token {
                    tok: Tok::Punct(ch),
                    line,
                });
            }
            i += 1;
        }
    }
    out
}

/// If a comment, string, raw string, byte string or char literal starts at `i`, the index
/// after it (counting the newlines it spans); else `i`.
fn skip_trivia(c: &[char], i: usize, line: &mut usize) -> usize {
    let count = |from: usize, to: usize, line: &mut usize| {
        *line += c[from..to.min(c.len())]
            .iter()
            .filter(|&&x| x == '\n')
            .count();
        to
    };
    let at = |k: usize| c.get(k).copied();
    match c[i] {
        '\n' => {
            *line += 1;
            i + 1
        }
        '/' if at(i + 1) == Some('/') => {
            let mut j = i;
            while j < c.len() && c[j] != '\n' {
                j += 1;
            }
            j
        }
        '/' if at(i + 1) == Some('*') => {
            let (mut j, mut depth) = (i + 2, 1);
            while j < c.len() && depth > 0 {
                if c[j] == '/' && at(j + 1) == Some('*') {
                    depth += 1;
                    j += 1;
                } else if c[j] == '*' && at(j + 1) == Some('/') {
                    depth -= 1;
                    j += 1;
                }
                j += 1;
            }
            count(i, j, line)
        }
        '"' => count(i, string_end(c, i + 1), line),
        'b' if at(i + 1) == Some('"') && !ident_before(c, i) => {
            count(i, string_end(c, i + 2), line)
        }
        'r' | 'b' if !ident_before(c, i) => match raw_string_end(c, i) {
            Some(end) => count(i, end, line),
            None => i,
        },
        '\'' => char_literal_end(c, i).unwrap_or(i),
        _ => i,
    }
}

fn ident_before(c: &[char], i: usize) -> bool {
    i > 0 && (c[i - 1].is_alphanumeric() || c[i - 1] == '_')
}

/// The index after the closing `"` of a string whose contents start at `i`.
fn string_end(c: &[char], mut i: usize) -> usize {
    while i < c.len() {
        match c[i] {
            '\\' => i += 2,
            '"' => return i + 1,
            _ => i += 1,
        }
    }
    c.len()
}

/// `r"..."`, `r#"..."#`, `br"..."` starting at `i`: the index after it.
fn raw_string_end(c: &[char], i: usize) -> Option<usize> {
    let mut j = i;
    if c[j] == 'b' {
        j += 1;
    }
    if c.get(j) != Some(&'r') {
        return None;
    }
    j += 1;
    let mut hashes = 0;
    while c.get(j) == Some(&'#') {
        hashes += 1;
        j += 1;
    }
    if c.get(j) != Some(&'"') {
        return None;
    }
    j += 1;
    while j < c.len() {
        if c[j] == '"' && (0..hashes).all(|h| c.get(j + 1 + h) == Some(&'#')) {
            return Some(j + 1 + hashes);
        }
        j += 1;
    }
    Some(c.len())
}

/// `'x'`, `'\n'`, `'\u{..}'` at `i` (a lifetime `'a` is not one): the index after it.
fn char_literal_end(c: &[char], i: usize) -> Option<usize> {
    if c.get(i + 1) == Some(&'\\') {
        let close = (i + 2..c.len().min(i + 12)).find(|&j| c[j] == '\'')?;
        return Some(close + 1);
    }
    (c.get(i + 2) == Some(&'\'')).then_some(i + 3)
}
