//! The overrides files the server knows: each open IR file's sidecar (`m.overrides` next to
//! `m.mlir`, read from disk) and every open document whose path ends in `.overrides` (its
//! editor text wins over the disk).
//!
//! The analysis has one overrides input, so all known files are in force together: their
//! texts are joined in path order and [`Segments`] maps offsets of the joined text back to
//! each file, for diagnostics and edits.

use std::{collections::BTreeMap, sync::Arc};

/// The overrides file next to an IR file: `dir/m.mlir` → `dir/m.overrides`.
pub(crate) fn sidecar_of(path: &str) -> Option<String> {
    let name_start = path.rfind('/').map_or(0, |i| i + 1);
    let dot = path[name_start..].rfind('.')? + name_start;
    if dot == name_start {
        return None;
    }
    Some(format!("{}.overrides", &path[..dot]))
}

pub(crate) fn is_overrides_path(path: &str) -> bool {
    path.ends_with(".overrides")
}

#[derive(Debug, Clone)]
struct Source {
    text: base_db::FileText,
    /// Open in the editor: the editor's text is authoritative.
    open: bool,
}

#[derive(Debug, Default)]
pub(crate) struct OverrideSources {
    sources: BTreeMap<String, Source>,
}

/// One file's place in the joined text.
#[derive(Debug, Clone)]
pub(crate) struct Segment {
    pub(crate) path: String,
    pub(crate) start: u32,
    pub(crate) text: base_db::FileText,
}

/// The joined overrides text and where each file's text sits in it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Segments {
    pub(crate) origin: String,
    pub(crate) text: Arc<str>,
    pub(crate) segments: Vec<Segment>,
}

impl Segments {
    /// The file and local offset of a joined-text offset.
    pub(crate) fn locate(&self, offset: u32) -> Option<(&Segment, u32)> {
        let seg = self.segments.iter().rev().find(|s| s.start <= offset)?;
        Some((seg, (offset - seg.start).min(seg.text.len() as u32)))
    }

    pub(crate) fn segment(&self, path: &str) -> Option<&Segment> {
        self.segments.iter().find(|s| s.path == path)
    }
}

impl OverrideSources {
    pub(crate) fn contains(&self, path: &str) -> bool {
        self.sources.contains_key(path)
    }

    pub(crate) fn text(&self, path: &str) -> Option<base_db::FileText> {
        self.sources.get(path).map(|s| s.text.clone())
    }

    /// Adds the sidecar of an IR file if it exists on disk and is not known yet.
    pub(crate) fn add_sidecar(&mut self, ir_path: &str) -> bool {
        let Some(path) = sidecar_of(ir_path) else { return false };
        if self.sources.contains_key(&path) {
            return false;
        }
        match crate::files::read_regular_file(&path) {
            Ok(text) => {
                tracing::info!(path = %path, "overrides sidecar loaded");
                self.sources.insert(path, Source { text: Arc::new(text), open: false });
                true
            }
            Err(_) => false,
        }
    }

    /// The editor opened or changed an overrides document.
    pub(crate) fn set_open(&mut self, path: &str, text: base_db::FileText) {
        self.sources.insert(path.to_owned(), Source { text, open: true });
    }

    /// The editor closed an overrides document: fall back to the disk if it is a sidecar of
    /// an open IR file, else forget it.
    pub(crate) fn close(&mut self, path: &str, still_wanted: bool) {
        self.sources.remove(path);
        if still_wanted && let Ok(text) = crate::files::read_regular_file(path) {
            self.sources.insert(path.to_owned(), Source { text: Arc::new(text), open: false });
        }
    }

    /// The file changed on disk; open documents ignore the disk.
    pub(crate) fn reload(&mut self, path: &str) -> bool {
        let Some(src) = self.sources.get_mut(path) else { return false };
        if src.open {
            return false;
        }
        match crate::files::read_regular_file(path) {
            Ok(text) if *src.text != *text => {
                src.text = Arc::from(text);
                true
            }
            Ok(_) => false,
            Err(_) => {
                self.sources.remove(path);
                true
            }
        }
    }

    /// Forgets sidecars no open IR file wants (open documents stay).
    pub(crate) fn retain(&mut self, wanted: impl Fn(&str) -> bool) {
        self.sources.retain(|path, s| s.open || wanted(path));
    }

    pub(crate) fn paths(&self) -> Vec<String> {
        self.sources.keys().cloned().collect()
    }

    pub(crate) fn segments(&self) -> Segments {
        let mut text = String::new();
        let mut segments = Vec::new();
        for (path, src) in &self.sources {
            segments.push(Segment {
                path: path.clone(),
                start: text.len() as u32,
                text: src.text.clone(),
            });
            text.push_str(&src.text);
            // Options are line based: a file without a final newline must not run into the
            // next file's first line.
            if !src.text.ends_with('\n') {
                text.push('\n');
            }
        }
        let origin = segments.iter().map(|s| s.path.as_str()).collect::<Vec<_>>().join(" + ");
        Segments { origin, text: Arc::from(text), segments }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sidecar_that_is_a_named_pipe_is_skipped_without_blocking() {
        let dir = std::env::temp_dir().join(format!("ttnn-sidecar-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("the temp dir is made");
        let pipe = dir.join("m.overrides");
        let made = std::process::Command::new("mkfifo").arg(&pipe).status().expect("mkfifo runs");
        assert!(made.success());
        let ir = dir.join("m.mlir").to_str().expect("temp paths are UTF-8 here").to_owned();
        let (tx, rx) = std::sync::mpsc::channel();
        // On a thread: a read that blocked would fail the test at the timeout, not hang it.
        std::thread::spawn(move || {
            let mut sources = OverrideSources::default();
            let _ = tx.send((sources.add_sidecar(&ir), sources.paths()));
        });
        let result = rx.recv_timeout(std::time::Duration::from_secs(10));
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(result, Ok((false, Vec::new())));
    }

    #[test]
    fn sidecars_replace_the_extension() {
        assert_eq!(sidecar_of("/a/b/m.mlir").as_deref(), Some("/a/b/m.overrides"));
        assert_eq!(sidecar_of("/a.b/m").as_deref(), None);
        assert_eq!(sidecar_of("/a/.mlir").as_deref(), None);
    }

    #[test]
    fn joined_offsets_map_back_to_each_file() {
        let mut s = OverrideSources::default();
        s.set_open("/b.overrides", Arc::new("max-legal-layouts=8".to_owned()));
        s.set_open("/a.overrides", Arc::new("x\n".to_owned()));
        let seg = s.segments();
        assert_eq!(&*seg.text, "x\nmax-legal-layouts=8\n");
        assert_eq!(seg.origin, "/a.overrides + /b.overrides");
        let (file, local) = seg.locate(4).expect("in range");
        assert_eq!((file.path.as_str(), local), ("/b.overrides", 2));
        let (file, local) = seg.locate(1).expect("in range");
        assert_eq!((file.path.as_str(), local), ("/a.overrides", 1));
    }
}
