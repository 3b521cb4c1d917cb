//! The deterministic benchmark corpus of issue 3: an envelope object with a `data` array of user
//! objects; the current side has ~1% of items mutated (field removed, type changed, nullability
//! flipped, value changed, items added and removed) and 25% of positions shuffled.

/// A small deterministic generator (64-bit LCG), so the corpus is the same on every run.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407))
    }
    pub fn step(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.step() % n.max(1)
    }
}

const CITIES: &[&str] = &["Lisbon", "Berlin", "Nairobi", "Osaka", "Lima", "Quebec"];
const TAGS: &[&str] = &[
    "admin", "beta", "trial", "vip", "legacy", "partner", "eu", "us",
];

fn user(i: u64, rng: &mut Rng) -> String {
    let tags: Vec<String> = (0..rng.below(4))
        .map(|_| format!("\"{}\"", TAGS[rng.below(TAGS.len() as u64) as usize]))
        .collect();
    let score = if rng.below(5) == 0 {
        "null".to_owned()
    } else {
        format!("{}.{}", rng.below(100), rng.below(100))
    };
    let age = if rng.below(7) == 0 {
        "null".to_owned()
    } else {
        (18 + rng.below(60)).to_string()
    };
    format!(
        concat!(
            "{{\"id\":{i},\"uuid\":\"{a:08x}-{b:04x}-4{c:03x}-8{d:03x}-{e:012x}\",\"name\":\"User {i}\",",
            "\"email\":\"user{i}@example.com\",\"active\":{active},\"verified\":{verified},",
            "\"score\":{score},\"age\":{age},\"balance\":{bal}.{cents:02},",
            "\"address\":{{\"street\":\"{n} Main Street\",\"city\":\"{city}\",\"zip\":\"{zip:05}\",",
            "\"geo\":{{\"lat\":{lat}.{latf},\"lng\":-{lng}.{lngf}}}}},",
            "\"company\":{{\"name\":\"Company {co}\",\"department\":\"Engineering\",\"title\":\"Staff Engineer\"}},",
            "\"phone\":\"+1-555-{phone:04}\",\"lastLoginAt\":\"2026-02-{day:02}T08:30:00Z\",",
            "\"tags\":[{tags}],\"createdAt\":\"2026-01-{day:02}T10:00:00Z\"}}"
        ),
        i = i,
        a = rng.step() & 0xffff_ffff,
        b = rng.below(0xffff),
        c = rng.below(0xfff),
        d = rng.below(0xfff),
        e = rng.step() & 0xffff_ffff_ffff,
        active = rng.below(2) == 0,
        verified = rng.below(3) == 0,
        score = score,
        age = age,
        bal = rng.below(10_000),
        cents = rng.below(100),
        n = 1 + rng.below(999),
        city = CITIES[rng.below(CITIES.len() as u64) as usize],
        zip = rng.below(100_000),
        lat = rng.below(90),
        latf = rng.below(10_000),
        lng = rng.below(180),
        lngf = rng.below(10_000),
        tags = tags.join(","),
        day = 1 + rng.below(28),
        co = rng.below(500),
        phone = rng.below(10_000),
    )
}

fn envelope(users: &[String], total: usize) -> String {
    let mut out = String::with_capacity(users.iter().map(String::len).sum::<usize>() + 256);
    out.push_str("{\"meta\":{\"requestId\":\"req-0001\",\"page\":1,\"perPage\":");
    out.push_str(&total.to_string());
    out.push_str(",\"total\":");
    out.push_str(&total.to_string());
    out.push_str("},\"data\":[");
    out.push_str(&users.join(","));
    out.push_str("],\"links\":{\"self\":\"/v1/users?page=1\",\"next\":null}}");
    out
}

/// The baseline and current documents with `n` users; also the number of mutated items.
pub fn users_pair(n: u64) -> (String, String, usize) {
    let mut rng = Rng::new(n);
    let baseline: Vec<String> = (0..n).map(|i| user(i, &mut rng)).collect();
    let mut current = baseline.clone();
    let mut mutated = 0;
    let mut added = 0;
    // ~1% of the items mutated, six kinds in turn.
    let step = 100u64.min(n);
    let mut i = 0u64;
    let mut kind = 0;
    let mut removed = Vec::new();
    while i < n {
        let at = (i + rng.below(step)) as usize;
        if at >= current.len() {
            break;
        }
        let item = &mut current[at];
        match kind % 6 {
            0 => *item = item.replacen(&format!(",\"email\":\"user{at}@example.com\""), "", 1),
            1 => {
                *item = item.replacen("\"age\":", "\"age\":\"", 1).replacen(
                    ",\"balance\"",
                    "\",\"balance\"",
                    1,
                )
            }
            2 => {
                *item = if item.contains("\"score\":null") {
                    item.replacen("\"score\":null", "\"score\":1.5", 1)
                } else {
                    let start = item.find("\"score\":").unwrap_or(0);
                    let end = item[start..].find(',').map_or(start, |e| start + e);
                    format!("{}\"score\":null{}", &item[..start], &item[end..])
                }
            }
            3 => {
                *item = item.replacen(
                    &format!("\"name\":\"User {at}\""),
                    &format!("\"name\":\"Renamed {at}\""),
                    1,
                )
            }
            4 => removed.push(at),
            _ => added += 1,
        }
        kind += 1;
        mutated += 1;
        i += step;
    }
    for at in removed.iter().rev() {
        current.remove(*at);
    }
    let mut extra_rng = Rng::new(n + 7);
    for k in 0..added {
        current.push(user(n + k as u64, &mut extra_rng));
    }
    // Shuffle 25% of the positions among themselves.
    let len = current.len();
    let mut picked: Vec<usize> = (0..len).filter(|_| rng.below(4) == 0).collect();
    let targets = {
        let mut t = picked.clone();
        for j in (1..t.len()).rev() {
            let k = rng.below(j as u64 + 1) as usize;
            t.swap(j, k);
        }
        t
    };
    let originals: Vec<String> = picked.iter().map(|&p| current[p].clone()).collect();
    for (value, &to) in originals.into_iter().zip(&targets) {
        current[to] = value;
    }
    picked.clear();
    (
        envelope(&baseline, n as usize),
        envelope(&current, len),
        mutated,
    )
}

/// A 20,000-scalar array and a copy with one element changed.
pub fn scalars_pair() -> (String, String) {
    let items: Vec<String> = (0..20_000).map(|i| (i * 7 % 1000).to_string()).collect();
    let mut changed = items.clone();
    changed[12_345] = "-1".into();
    (
        format!("[{}]", items.join(",")),
        format!("[{}]", changed.join(",")),
    )
}

/// A 10,000-item keyed array and the same array reversed.
pub fn reversed_pair() -> (String, String) {
    let mut rng = Rng::new(10_000);
    let mut items: Vec<String> = (0..10_000).map(|i| user(i, &mut rng)).collect();
    let a = format!("[{}]", items.join(","));
    items.reverse();
    (a, format!("[{}]", items.join(",")))
}
