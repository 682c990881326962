use clap::Parser;

fn main() {
    let cli = imagebump::cli::Cli::parse();
    imagebump::app::init_logging(cli.verbose, cli.quiet, cli.log_format);
    std::process::exit(imagebump::app::main(cli));
}
