use clap::Parser;

fn main() {
    let cli = imagebump::cli::Cli::parse();
    imagebump::app::init_logging(cli.verbose, cli.quiet);
    std::process::exit(imagebump::app::main(cli));
}
