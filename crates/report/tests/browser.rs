//! The HTML report in a real browser (headless Chromium): every plot is
//! drawn, with data in it, and the page needs no network and no JavaScript.
//!
//! The test renders two reports (the `base`/`new` fixtures, and a numeric
//! sweep of two kernels over three values built in memory), adds a small
//! checking script to a *copy* of each page (the report itself has none),
//! and reads back with `--dump-dom` what Chromium laid out: for each
//! `<figure class="plot">`, the rendered size of its SVG and how many data
//! marks (polylines, paths, circles) have a non-empty box. It fails if a plot
//! is empty or missing.
//!
//! It skips, saying why, where no Chromium is installed
//! (`apt-get install -y chromium`; `CHROMIUM=/path` names another). With
//! `RECLAIMLAB_SCREENSHOTS=DIR` it also saves screenshots of the pages, and
//! with `RECLAIMLAB_SCREENSHOT_PAGES=main=PATH.html,sweep=PATH.html` checks
//! and photographs those pages too (how `docs/screenshots/` was made).

use std::path::{Path, PathBuf};
use std::process::Command;

use reclaimlab_report::{build_report, render_html, report_from_dirs, Options, RunInput};

fn chromium() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    for dir in std::env::split_paths(&path) {
        for name in [
            "chromium",
            "chromium-browser",
            "google-chrome",
            "google-chrome-stable",
        ] {
            let p = dir.join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

/// Chromium with the flags that work on a closed network, as root, headless.
fn browser(bin: &Path, profile: &Path) -> Command {
    let mut c = Command::new(bin);
    c.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
    ])
    .arg(format!("--user-data-dir={}", profile.display()));
    c
}

/// What the checking script reports per figure: title, SVG width × height,
/// data marks (coloured polylines of two points or more, coloured circles)
/// with a non-empty box.
const CHECK: &str = r#"<script>
(function () {
  var out = [];
  document.querySelectorAll('figure.plot').forEach(function (f) {
    var svg = f.querySelector('svg');
    var r = svg ? svg.getBoundingClientRect() : {width: 0, height: 0};
    var marks = 0;
    if (svg) {
      // Data marks only: axes and grid are black or grey, data has its
      // run's colour.
      svg.querySelectorAll('polyline, path, circle').forEach(function (e) {
        var colour = [e.getAttribute('stroke'), e.getAttribute('fill')]
          .map(function (c) { return (c || '').toUpperCase(); })
          .filter(function (c) { return c.charAt(0) == '#'; })[0] || '';
        if (colour == '' || colour == '#000000' || colour == '#FFFFFF') return;
        var b = e.getBBox();
        var pts = (e.getAttribute('points') || '').trim().split(/\s+/).length;
        if (e.tagName == 'circle' ? b.width > 0 : (pts > 1 && (b.width > 0 || b.height > 0))) marks++;
      });
    }
    out.push([f.getAttribute('data-title'), Math.round(r.width), Math.round(r.height), marks].join('\t'));
  });
  var pre = document.createElement('pre');
  pre.id = 'plot-check';
  pre.textContent = 'PLOTS\n' + out.join('\n') + '\nEND';
  document.body.appendChild(pre);
})();
</script>"#;

/// Per figure: (title, width, height, marks), as Chromium laid it out.
fn check_page(bin: &Path, html: &str, tmp: &Path) -> Vec<(String, u32, u32, u32)> {
    let page = tmp.join("check.html");
    std::fs::write(&page, html.replace("</body>", &format!("{CHECK}</body>"))).unwrap();
    let out = browser(bin, &tmp.join("profile"))
        .args(["--dump-dom", "--virtual-time-budget=10000"])
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("chromium runs");
    let dom = String::from_utf8_lossy(&out.stdout);
    let body = dom
        .split("PLOTS\n")
        .nth(1)
        .and_then(|s| s.split("\nEND").next())
        .unwrap_or_else(|| {
            panic!(
                "the check script did not run: {}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
    body.lines()
        .filter(|l| !l.is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            (
                f[0].to_string(),
                f[1].parse().unwrap(),
                f[2].parse().unwrap(),
                f[3].parse().unwrap(),
            )
        })
        .collect()
}

/// A screenshot of `html` (with `css` added), `height` px tall.
fn screenshot(bin: &Path, html: &str, css: &str, height: u32, png: &Path, tmp: &Path) {
    let page = tmp.join("shot.html");
    std::fs::write(
        &page,
        html.replace("</head>", &format!("<style>{css}</style></head>")),
    )
    .unwrap();
    let ok = browser(bin, &tmp.join("profile"))
        .arg(format!("--window-size=1280,{height}"))
        .arg(format!("--screenshot={}", png.display()))
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("chromium runs")
        .status
        .success();
    assert!(ok && png.is_file(), "no screenshot {}", png.display());
}

fn assert_plots_drawn(what: &str, figs: &[(String, u32, u32, u32)], at_least: usize) {
    assert!(
        figs.len() >= at_least,
        "{what}: {} plots, expected at least {at_least}: {figs:?}",
        figs.len()
    );
    for (title, w, h, marks) in figs {
        assert!(*w > 200 && *h > 100, "{what}: plot `{title}` is {w}×{h} px");
        assert!(*marks > 0, "{what}: plot `{title}` has no data drawn");
    }
}

/// A sweep of two kernels over t = 10, 100, 1000, in memory.
fn sweep_runs() -> Vec<RunInput> {
    use reclaimlab_report::{LatencySample, RunMeta, VmstatPoint};
    let mut runs = Vec::new();
    for (ki, k) in ["v5.15", "v5.16"].iter().enumerate() {
        for (ti, t) in [10u32, 100, 1000].iter().enumerate() {
            let scale = (ki * 3 + ti + 1) as f64;
            let latency = (0..200)
                .map(|i| LatencySample {
                    step: 4,
                    metric: "mmap".into(),
                    t_s: f64::from(i),
                    value_us: 1000.0 * (10.0 + scale * f64::from(i % 17)),
                })
                .collect();
            let vmstat_series = (0..60)
                .map(|i| VmstatPoint {
                    t_s: f64::from(i),
                    kswapd_scan: i64::from(i) * 1000,
                    direct_scan: i64::from(i * i) * (scale as i64) * 100,
                    kswapd_steal: i64::from(i) * 500,
                    direct_steal: i64::from(i) * 50,
                    ..VmstatPoint::default()
                })
                .collect();
            runs.push(RunInput {
                meta: RunMeta {
                    name: format!("{k},t={t}"),
                    workload: "stutterp".into(),
                    reclaim_scope: "global".into(),
                    settings: vec![
                        ("kernel".into(), k.to_string()),
                        ("seed".into(), "1".into()),
                        ("t".into(), t.to_string()),
                    ],
                    ..RunMeta::default()
                },
                latency,
                vmstat_series,
                vmstat_delta: [("pgscan_direct".to_string(), 1000 * scale as i64)].into(),
                ..RunInput::default()
            });
        }
    }
    runs
}

#[test]
fn every_plot_is_drawn_in_chromium() {
    let Some(bin) = chromium() else {
        eprintln!(
            "SKIPPED: no Chromium (apt-get install -y chromium, or CHROMIUM=/path/to/chrome)"
        );
        return;
    };
    let tmp = std::env::temp_dir().join(format!("reclaimlab-browser-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    let fx = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let pair = report_from_dirs(&[fx.join("base"), fx.join("new")], Options::default()).unwrap();
    let pair_html = String::from_utf8(render_html(&pair)).unwrap();
    // Two latency steps, four velocity counters, the fixtures' stall kinds.
    let figs = check_page(&bin, &pair_html, &tmp);
    assert_plots_drawn("fixtures", &figs, 2 + 4 + 1);
    for op in &pair.comparable.compared {
        let title = format!("{op}: latency tail (CCDF)");
        assert!(
            figs.iter().any(|f| f.0 == title),
            "no plot `{title}`: {figs:?}"
        );
    }
    // The check itself: a plot with axes but no data fails it.
    let start = pair_html.find("<figure class=\"plot\"").unwrap();
    let end = start + pair_html[start..].find("</figure>").unwrap();
    let emptied = format!(
        "{}{}{}",
        &pair_html[..start],
        // Data recoloured as axes: the plot keeps its axes, loses its data.
        pair_html[start..end]
            .replace("stroke=\"#1F77B4\"", "stroke=\"#000000\"")
            .replace("stroke=\"#D62728\"", "stroke=\"#000000\""),
        &pair_html[end..]
    );
    let figs = check_page(&bin, &emptied, &tmp);
    let caught = std::panic::catch_unwind(|| assert_plots_drawn("emptied", &figs, 1));
    assert!(
        caught.is_err(),
        "an emptied plot passed the check: {figs:?}"
    );
    let sweep = build_report(&sweep_runs(), Options::default());
    let sweep_html = String::from_utf8(render_html(&sweep)).unwrap();
    let figs = check_page(&bin, &sweep_html, &tmp);
    assert_plots_drawn("sweep", &figs, 5);
    assert!(
        figs.iter().any(|f| f.0 == "Direct pages scanned against t"),
        "{figs:?}"
    );

    // Screenshots, and the pages named, when asked.
    let Ok(dir) = std::env::var("RECLAIMLAB_SCREENSHOTS") else {
        std::fs::remove_dir_all(&tmp).ok();
        return;
    };
    let dir = PathBuf::from(dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut pages = vec![
        ("fixtures".to_string(), pair_html),
        ("sweep-example".to_string(), sweep_html),
    ];
    if let Ok(list) = std::env::var("RECLAIMLAB_SCREENSHOT_PAGES") {
        for item in list.split(',') {
            let (name, path) = item.split_once('=').expect("NAME=PATH");
            pages.push((
                name.to_string(),
                std::fs::read_to_string(path).expect("page readable"),
            ));
        }
    }
    for (name, html) in &pages {
        assert_plots_drawn(name, &check_page(&bin, html, &tmp), 1);
        screenshot(
            &bin,
            html,
            "",
            1400,
            &dir.join(format!("{name}-top.png")),
            &tmp,
        );
        // The plots alone: every section but the plots hidden.
        let only_plots =
            "nav,h1,section:not(#latency):not(#velocity):not(#stalls):not(#sweep){display:none}";
        screenshot(
            &bin,
            html,
            only_plots,
            2000,
            &dir.join(format!("{name}-plots.png")),
            &tmp,
        );
    }
    std::fs::remove_dir_all(&tmp).ok();
}
