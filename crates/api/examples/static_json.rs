//! The ceiling for `bench/api.sh`: an actix-web handler answering a fixed 2 KB JSON document,
//! with the same framework, worker count and HTTP stack as `apidrift serve` but no auth, no
//! database and no rate limit.
//!
//! `cargo run --release -p apidrift-api --example static_json -- 127.0.0.1:3901 [WORKERS]`

use actix_web::{App, HttpResponse, HttpServer, web};

fn document() -> Vec<u8> {
    let mut items = Vec::new();
    let mut text = String::new();
    let mut n = 0;
    while text.len() < 2048 - 64 {
        items.push(
            serde_json::json!({"id": n, "name": format!("endpoint-{n}"), "health": "healthy"}),
        );
        text = serde_json::json!({"endpoints": items}).to_string();
        n += 1;
    }
    text.into_bytes()
}

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let bind = args.next().unwrap_or_else(|| "127.0.0.1:3901".into());
    let workers: usize = args.next().and_then(|w| w.parse().ok()).unwrap_or(0);
    let body = web::Bytes::from(document());
    println!("static-json: {} bytes on http://{bind}", body.len());
    actix_web::rt::System::new().block_on(async move {
        let mut server = HttpServer::new(move || {
            let body = body.clone();
            App::new().route(
                "/",
                web::get().to(move || {
                    let body = body.clone();
                    async move {
                        HttpResponse::Ok()
                            .content_type("application/json")
                            .body(body)
                    }
                }),
            )
        });
        if workers > 0 {
            server = server.workers(workers);
        }
        server.bind(bind)?.run().await
    })
}
