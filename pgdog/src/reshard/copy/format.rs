//! The COPY data format of a copy (binary between equal major versions, else text) and the
//! large-table split tuning, from `[resharding]`.
use super::*;

/// How a large table is read in parallel; [`copy_data`] uses [`CopyTuning::default`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CopyTuning {
    /// A (table, source shard) whose source table is larger than this (`pg_relation_size`) is
    /// read by several readers, each a CTID range, all under the same exported snapshot.
    /// 0 disables the split.
    pub split_bytes: u64,
}

impl Default for CopyTuning {
    fn default() -> Self {
        CopyTuning {
            split_bytes: DEFAULT_SPLIT_BYTES,
        }
    }
}

/// The default [`CopyTuning::split_bytes`]: 64 MiB.
pub const DEFAULT_SPLIT_BYTES: u64 = 64 * 1024 * 1024;

impl CopyTuning {
    /// `[resharding] copy_split_bytes`.
    pub fn from_settings(r: &crate::config::Resharding) -> CopyTuning {
        CopyTuning {
            split_bytes: r.copy_split_bytes,
        }
    }
}

/// How the COPY data format is chosen (`[resharding] copy_format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FormatMode {
    /// Binary when the versions allow it, text otherwise.
    #[default]
    Auto,
    /// Always text.
    Text,
}

impl FormatMode {
    pub fn from_settings(r: &crate::config::Resharding) -> FormatMode {
        match r.copy_format {
            crate::config::ReshardCopyFormat::Auto => FormatMode::Auto,
            crate::config::ReshardCopyFormat::Text => FormatMode::Text,
        }
    }
}

/// The major version of a `server_version_num`: `/ 10000` from PostgreSQL 10 on (180001 ->
/// 18), `/ 100` before (90605 -> 906).
pub fn major_version(version_num: u32) -> u32 {
    if version_num >= 100_000 {
        version_num / 10_000
    } else {
        version_num / 100
    }
}

/// The COPY data format of one (table, source shard): binary when `mode` allows it and the
/// source server and every destination shard written (`dests`) report the same major version;
/// text otherwise, also when a version is unknown (`None`).
pub fn choose_format(mode: FormatMode, source: Option<u32>, dests: &[Option<u32>]) -> CopyFormat {
    if mode == FormatMode::Text {
        return CopyFormat::Text;
    }
    let Some(source) = source.map(major_version) else {
        return CopyFormat::Text;
    };
    if dests.iter().all(|d| d.map(major_version) == Some(source)) {
        CopyFormat::Binary
    } else {
        CopyFormat::Text
    }
}

/// `server_version_num` of a server (`None` when it does not read as a number).
pub(crate) async fn server_version(t: &ServerTarget) -> Result<Option<u32>, CopyDataError> {
    let mut server = connect(t).await?;
    let rows = server
        .query_rows("SELECT current_setting('server_version_num')")
        .await
        .map_err(server_err(&t.addr(), "reading server_version_num"))?;
    server.terminate().await;
    Ok(rows
        .first()
        .and_then(|r| r.first()?.as_deref()?.trim().parse::<u32>().ok()))
}

/// What the COPY format of each copy is chosen from: the mode and, in automatic mode, every
/// destination shard's `server_version_num` (by shard).
#[derive(Debug, Clone, Default)]
pub(crate) struct FormatPlan {
    pub(crate) mode: FormatMode,
    pub(crate) dest_versions: Vec<Option<u32>>,
}

impl FormatPlan {
    /// In automatic `mode`, reads each destination's version.
    pub(crate) async fn load(
        mode: FormatMode,
        dests: &[ServerTarget],
    ) -> Result<FormatPlan, CopyDataError> {
        let mut dest_versions = Vec::with_capacity(dests.len());
        if mode == FormatMode::Auto {
            for t in dests {
                dest_versions.push(server_version(t).await?);
            }
        }
        Ok(FormatPlan {
            mode,
            dest_versions,
        })
    }

    /// The format of a copy read from a server at `source` into the shards `targets`.
    pub(crate) fn format(&self, source: Option<u32>, targets: &[usize]) -> CopyFormat {
        let dests: Vec<Option<u32>> = targets
            .iter()
            .map(|&s| self.dest_versions.get(s).copied().flatten())
            .collect();
        choose_format(self.mode, source, &dests)
    }
}
