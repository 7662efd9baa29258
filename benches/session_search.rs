//! Benchmark of history search (`Store::search_messages`) on a realistic on-disk database.
//!
//! Builds, or reuses, a database under `target/bench-data/` with `HERMES_BENCH_MESSAGES`
//! messages (default 1,000,000) in about one session per 100 messages, owned by 50 owners (40
//! people with direct and group sessions, 10 shared group chats). Messages are English sentences
//! drawn from a word list with a Zipf distribution, ~5% Chinese, Japanese and Korean text, ~1%
//! with a rare made-up word, and tool calls with their results as in real sessions. Rows go in
//! through the real schema (`Store::open` runs the migrations; triggers fill both full-text
//! indexes) in large transactions. Then it runs a few hundred searches of mixed kinds, each
//! scoped to one random owner as the `session_search` tool does, and prints latency per kind.
//!
//! Run: `cargo bench --bench session_search` (add `HERMES_BENCH_MESSAGES=100000` for a quick
//! run). Not a test: it asserts nothing, it measures.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use hermes::store::{Search, SearchScope, SqliteStore as Store};
use hermes_adapter::SessionKey;
use rusqlite::params;

/// Part of the data file's name: change it when the generated data changes, so that an old
/// database is not reused.
const DATA_VERSION: u32 = 2;
const OWNERS: u64 = 50;
const SEARCHES_PER_KIND: usize = 60;
/// Sessions being talked in at the same time; messages interleave between them.
const CONCURRENT: usize = 200;

const COMMON: &str = "the I you to a and it is that of in we for this on can be with have \
    do what not it's my your are so but if just at me was will how about would like there get \
    know one no all they some from think need want make time more up go out when then good \
    also which could should use them see here now an or new way file work thing first because \
    by any look try well right let other only day over code back still after help really sure \
    yes much as find where our two very question people take even same write run change thanks \
    last give why something long before data error point next problem set test check great best \
    open start keep call tell read add value show plan idea list week morning meeting email \
    project version issue build server user page note answer number place today tomorrow \
    yesterday home money price book trip flight hotel train ticket weather dinner lunch coffee \
    music movie game phone message friend family doctor appointment birthday gift car \
    morning evening night hour minute month year city country language word name address \
    report budget invoice account password update install config release branch commit merge \
    review deploy database query table index cache memory disk network request response";

const UNCOMMON: &str = "lisbon porto kyoto nairobi montreal reykjavik tbilisi oaxaca \
    zeppelin walrus otter narwhal quokka pangolin axolotl capybara marmot heron \
    sourdough kimchi risotto ramen dumpling croissant espresso matcha tiramisu \
    violin cello harmonica ukulele saxophone accordion telescope microscope compass \
    mortgage pension dividend invoice receipt warranty deductible escrow subpoena \
    kubernetes postgres terraform webassembly tokio serde rustls nginx grafana \
    marathon triathlon bouldering kayaking snorkeling paragliding fencing curling \
    astronomy geology botany linguistics cartography typography calligraphy origami \
    allergy vaccine migraine physiotherapy dermatologist orthodontist prescription \
    thesis dissertation manuscript anthology sonnet haiku limerick palindrome";

const CJK: &str = "你好 世界 今天 明天 昨天 天气 吃饭 工作 学习 朋友 家人 电脑 手机 \
    问题 时间 地方 会议 项目 文件 代码 服务 数据 网络 音乐 电影 旅行 飞机 火车 酒店 \
    医生 生日 礼物 早上 晚上 周末 北京 上海 东京 咖啡 午饭 晚饭 老师 学生 公司 \
    こんにちは ありがとう 天気 東京 会議 仕事 映画 音楽 旅行 電車 今日 明日 \
    안녕하세요 감사합니다 날씨 오늘 내일 회의 친구 음악 영화 여행";

const GARBAGE: &[&str] = &[
    "\"unterminated",
    "NEAR(budget",
    "flight AND",
    "-password",
    "col:term",
    "(meeting OR",
    "*",
    "plan* \"",
    "^start NOT",
    "a:b:c \"d",
];

/// A small deterministic generator (xorshift64*), so every run builds the same data.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

/// Words with Zipf weights (the k-th most common has weight 1/k).
struct Vocabulary {
    words: Vec<&'static str>,
    cumulative: Vec<f64>,
    rare: Vec<String>,
    cjk: Vec<&'static str>,
}

impl Vocabulary {
    fn new() -> Self {
        let words: Vec<&str> = COMMON
            .split_whitespace()
            .chain(UNCOMMON.split_whitespace())
            .collect();
        let mut total = 0.0;
        let cumulative = (1..=words.len())
            .map(|k| {
                total += 1.0 / k as f64;
                total
            })
            .collect();
        let syllables = [
            "zor", "bla", "quen", "thi", "mox", "vel", "dra", "kun", "pry", "sol",
        ];
        let rare = (0..2000)
            .map(|i: usize| {
                let s = |n: usize| syllables[n % syllables.len()];
                format!("{}{}{}{}", s(i), s(i / 10), s(i / 100), s(i / 1000 + 3))
            })
            .collect();
        Vocabulary {
            words,
            cumulative,
            rare,
            cjk: CJK.split_whitespace().collect(),
        }
    }

    fn word(&self, rng: &mut Rng) -> &'static str {
        let total = *self.cumulative.last().unwrap_or(&1.0);
        let x = (rng.next() as f64 / u64::MAX as f64) * total;
        let i = self.cumulative.partition_point(|c| *c < x);
        self.words[i.min(self.words.len() - 1)]
    }

    fn sentence(&self, rng: &mut Rng, out: &mut String) {
        let n = 5 + rng.below(20);
        for i in 0..n {
            let w = self.word(rng);
            if i == 0 {
                let mut c = w.chars();
                out.extend(c.next().map(|c| c.to_ascii_uppercase()));
                out.push_str(c.as_str());
            } else {
                out.push(' ');
                out.push_str(w);
            }
        }
        out.push_str(". ");
    }

    /// A message of 1..=`max_sentences` sentences; ~5% CJK, ~1% with a rare word.
    fn message(&self, rng: &mut Rng, max_sentences: usize) -> String {
        let mut out = String::new();
        if rng.chance(5) {
            for _ in 0..5 + rng.below(25) {
                out.push_str(self.cjk[rng.below(self.cjk.len())]);
            }
            out.push('。');
            return out;
        }
        for _ in 0..1 + rng.below(max_sentences) {
            self.sentence(rng, &mut out);
        }
        if rng.chance(1) {
            out.push_str(&self.rare[rng.below(self.rare.len())]);
        }
        out.trim_end().to_owned()
    }
}

fn owner_key(owner: u64, rng: &mut Rng) -> SessionKey {
    let text = if owner < 40 {
        if rng.chance(70) {
            format!("telegram:{}", 1000 + owner)
        } else {
            format!("telegram:-100{}:{}", rng.below(10), 1000 + owner)
        }
    } else {
        format!("telegram:-100{}:*", owner - 40)
    };
    text.parse().expect("valid key")
}

struct Row {
    session: i64,
    role: &'static str,
    content: String,
    tool_calls: Option<String>,
    tool_name: Option<&'static str>,
    at: i64,
}

/// Fill the database with `total` messages; returns the time it took.
async fn fill(store: &Store, total: u64) -> Duration {
    let started = Instant::now();
    let vocab = Vocabulary::new();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let sessions = (total / 100).max(1);
    let base: i64 = 1_700_000_000_000;
    let mut next_session = 0u64;
    let mut active: Vec<(i64, u64)> = Vec::new(); // (session id, messages left)
    let mut written = 0u64;
    while written < total {
        let mut batch: Vec<Row> = Vec::with_capacity(50_000);
        let mut new_sessions: Vec<(i64, SessionKey, i64)> = Vec::new();
        while batch.len() < 50_000 && written < total {
            let at = base + written as i64 * 30_000;
            while active.len() < CONCURRENT && next_session < sessions {
                next_session += 1;
                let key = owner_key(rng.next() % OWNERS, &mut rng);
                new_sessions.push((next_session as i64, key, at));
                active.push((next_session as i64, 20 + rng.below(160) as u64));
            }
            let slot = rng.below(active.len());
            let session = active[slot].0;
            let before = batch.len();
            let mut push = |role, content, tool_calls, tool_name| {
                batch.push(Row {
                    session,
                    role,
                    content,
                    tool_calls,
                    tool_name,
                    at,
                });
                written += 1;
            };
            push("user", vocab.message(&mut rng, 3), None, None);
            if rng.chance(15) {
                let calls = r#"[{"id":"c1","name":"web_fetch","arguments":"{}"}]"#.to_owned();
                push("assistant", String::new(), Some(calls), None);
                push("tool", vocab.message(&mut rng, 12), None, Some("web_fetch"));
            }
            push("assistant", vocab.message(&mut rng, 5), None, None);
            let left = &mut active[slot].1;
            *left = left.saturating_sub((batch.len() - before) as u64);
            if *left == 0 && next_session < sessions {
                active.swap_remove(slot);
            }
        }
        store
            .call(move |c| {
                let tx = c.transaction()?;
                for (id, key, at) in &new_sessions {
                    // Ended: a key has one active session at most, and these are history.
                    tx.prepare_cached(
                        "INSERT INTO sessions (id, key, platform, owner, created_at, updated_at,
                             ended_at, end_reason)
                         VALUES (?1, ?2, 'telegram', ?3, ?4, ?4, ?4, 'bench')",
                    )?
                    .execute(params![id, key.to_string(), key.owner(), at])?;
                }
                for r in &batch {
                    tx.prepare_cached(
                        "INSERT INTO messages (session_id, role, content, tool_calls, tool_call_id,
                             tool_name, created_at)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                    )?
                    .execute(params![
                        r.session,
                        r.role,
                        r.content,
                        r.tool_calls,
                        r.tool_name.map(|_| "c1"),
                        r.tool_name,
                        r.at
                    ])?;
                }
                tx.commit()?;
                Ok(())
            })
            .await
            .expect("insert a batch");
        eprint!("\r  {written} / {total} messages");
    }
    eprintln!();
    store
        .call(|c| {
            c.execute_batch("PRAGMA wal_checkpoint(TRUNCATE); PRAGMA optimize;")?;
            Ok(())
        })
        .await
        .expect("checkpoint");
    started.elapsed()
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    CommonWord,
    RareWord,
    TwoWords,
    Cjk2,
    Cjk4,
    Garbage,
}

const KINDS: [Kind; 6] = [
    Kind::CommonWord,
    Kind::RareWord,
    Kind::TwoWords,
    Kind::Cjk2,
    Kind::Cjk4,
    Kind::Garbage,
];

/// What a sampled message must look like.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Sample {
    English,
    Cjk,
    /// English ending in one of the rare words.
    Rare,
}

/// A random stored user message of the given kind and its session's owner, for queries that
/// should find something (people mostly search for what they did say).
async fn sample(store: &Store, rng: &mut Rng, total: u64, want: Sample) -> (String, String) {
    loop {
        let id = 1 + (rng.next() % total) as i64;
        let row: Option<(String, String)> = store
            .call(move |c| {
                Ok(c.query_row(
                    "SELECT m.content, s.owner FROM messages m JOIN sessions s ON s.id = m.session_id
                     WHERE m.id = ?1 AND m.role = 'user'",
                    [id],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .ok())
            })
            .await
            .expect("sample");
        let Some((text, owner)) = row else { continue };
        let ok = match want {
            Sample::Cjk => text.ends_with('。'),
            Sample::English => !text.ends_with('。'),
            Sample::Rare => !text.ends_with('。') && !text.ends_with('.'),
        };
        if ok && text.chars().count() > 6 {
            return (text, owner);
        }
    }
}

/// A query of `kind` and the owner whose history it searches.
async fn query(
    kind: Kind,
    store: &Store,
    vocab: &Vocabulary,
    rng: &mut Rng,
    total: u64,
) -> (String, String) {
    let random_owner = |rng: &mut Rng| owner_key(rng.next() % OWNERS, rng).owner();
    match kind {
        Kind::CommonWord => (vocab.words[rng.below(30)].to_owned(), random_owner(rng)),
        Kind::RareWord => {
            let (text, owner) = sample(store, rng, total, Sample::Rare).await;
            let word = text.rsplit(' ').next().unwrap_or_default().to_owned();
            (word, owner)
        }
        Kind::TwoWords => {
            let (text, owner) = sample(store, rng, total, Sample::English).await;
            let words: Vec<&str> = text.split_whitespace().collect();
            let i = rng.below(words.len() - 1);
            let phrase = format!("\"{} {}\"", words[i], words[i + 1]).replace('.', "");
            (phrase, owner)
        }
        Kind::Cjk2 => {
            let two: Vec<&&str> = vocab
                .cjk
                .iter()
                .filter(|w| w.chars().count() == 2)
                .collect();
            (two[rng.below(two.len())].to_string(), random_owner(rng))
        }
        Kind::Cjk4 => {
            let (text, owner) = sample(store, rng, total, Sample::Cjk).await;
            let chars: Vec<char> = text.chars().collect();
            let i = rng.below(chars.len() - 5);
            (chars[i..i + 4].iter().collect(), owner)
        }
        Kind::Garbage => {
            let q = format!("{} {}", GARBAGE[rng.below(GARBAGE.len())], vocab.word(rng));
            (q, random_owner(rng))
        }
    }
}

fn percentiles(label: &str, times: &mut [Duration], found: usize) {
    times.sort();
    let at = |p: f64| times[((times.len() as f64 - 1.0) * p).round() as usize];
    println!(
        "{label:<12} {:>5} {:>9.2} {:>9.2} {:>9.2} {:>8.1}",
        times.len(),
        at(0.5).as_secs_f64() * 1e3,
        at(0.99).as_secs_f64() * 1e3,
        times[times.len() - 1].as_secs_f64() * 1e3,
        found as f64 / times.len() as f64
    );
}

fn file_size(path: &Path) -> u64 {
    ["", "-wal", "-shm"]
        .iter()
        .filter_map(|s| std::fs::metadata(format!("{}{s}", path.display())).ok())
        .map(|m| m.len())
        .sum()
}

fn data_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target"));
    target.join("bench-data")
}

fn main() {
    let total = messages_from_env(1_000_000);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(run(total));
}

/// `HERMES_BENCH_MESSAGES` or `default`.
pub fn messages_from_env(default: u64) -> u64 {
    std::env::var("HERMES_BENCH_MESSAGES")
        .ok()
        .and_then(|v| v.replace('_', "").parse().ok())
        .unwrap_or(default)
}

/// Overall figures of one run, for the `gateway` bench's report.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    pub messages: i64,
    pub searches: usize,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    pub db_mib: f64,
    /// Seconds the fill took in the run that built the database.
    pub fill: String,
}

pub async fn run(total: u64) -> Summary {
    let dir = data_dir();
    std::fs::create_dir_all(&dir).expect("bench data directory");
    let path = dir.join(format!("sessions-{total}-v{DATA_VERSION}.db"));
    let done = dir.join(format!("sessions-{total}-v{DATA_VERSION}.done"));
    let reused = std::fs::read_to_string(&done).ok();
    if reused.is_none() {
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
        }
    }
    let store = Store::open(&path, hermes::store::Durability::Normal).expect("open the database");
    let fill_took = match reused {
        Some(took) => {
            println!("reusing {} (filled in {took})", path.display());
            took
        }
        None => {
            println!("filling {} with {total} messages…", path.display());
            let took = fill(&store, total).await;
            let took = format!("{:.1} s", took.as_secs_f64());
            println!("fill took {took}");
            std::fs::write(&done, &took).expect("marker file");
            took
        }
    };
    let (sessions, messages): (i64, i64) = store
        .call(|c| {
            Ok(c.query_row(
                "SELECT (SELECT COUNT(*) FROM sessions), (SELECT COUNT(*) FROM messages)",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?)
        })
        .await
        .expect("count");
    let sizes: Vec<(String, i64)> = store
        .call(|c| {
            let mut stmt = c.prepare(
                "SELECT CASE WHEN name LIKE 'messages_fts%' THEN 'word index'
                             WHEN name LIKE 'messages_trigram%' THEN 'trigram index'
                             WHEN name LIKE 'messages%' THEN 'messages'
                             ELSE 'other' END AS part, SUM(pgsize)
                 FROM dbstat GROUP BY part ORDER BY 2 DESC",
            )?;
            Ok(stmt
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<rusqlite::Result<_>>()?)
        })
        .await
        .expect("dbstat");
    println!(
        "{messages} messages in {sessions} sessions; database {:.1} MiB ({})",
        file_size(&path) as f64 / (1 << 20) as f64,
        sizes
            .iter()
            .map(|(part, bytes)| format!("{part} {:.1} MiB", *bytes as f64 / (1 << 20) as f64))
            .collect::<Vec<_>>()
            .join(", ")
    );

    let vocab = Vocabulary::new();
    let mut rng = Rng(42);
    let mut plan = Vec::new();
    for kind in KINDS {
        for _ in 0..SEARCHES_PER_KIND {
            let (q, owner) = query(kind, &store, &vocab, &mut rng, messages as u64).await;
            plan.push((kind, q, owner));
        }
    }
    // Interleave the kinds so that no kind profits from the cache another one warmed.
    for i in (1..plan.len()).rev() {
        let j = rng.below(i + 1);
        plan.swap(i, j);
    }
    let mut times: Vec<(Kind, Duration, usize)> = Vec::new();
    for (kind, q, owner) in plan {
        let started = Instant::now();
        let found = store
            .search_messages(&q, SearchScope::Owner(owner), 5, 5)
            .await
            .unwrap_or_else(|e| panic!("search {q:?} failed: {e}"));
        times.push((kind, started.elapsed(), found.len()));
    }
    println!(
        "\n{:<12} {:>5} {:>9} {:>9} {:>9} {:>8}",
        "kind", "n", "p50 ms", "p99 ms", "max ms", "sessions"
    );
    for kind in KINDS {
        let mine: Vec<&(Kind, Duration, usize)> = times.iter().filter(|t| t.0 == kind).collect();
        let found = mine.iter().map(|t| t.2).sum();
        percentiles(
            &format!("{kind:?}"),
            &mut mine.iter().map(|t| t.1).collect::<Vec<_>>(),
            found,
        );
    }
    let found = times.iter().map(|t| t.2).sum();
    let mut all: Vec<Duration> = times.iter().map(|t| t.1).collect();
    percentiles("overall", &mut all, found);
    let at = |p: f64| all[((all.len() as f64 - 1.0) * p).round() as usize].as_secs_f64() * 1e3;
    Summary {
        messages,
        searches: all.len(),
        p50_ms: at(0.5),
        p99_ms: at(0.99),
        max_ms: at(1.0),
        db_mib: file_size(&path) as f64 / (1 << 20) as f64,
        fill: fill_took,
    }
}
