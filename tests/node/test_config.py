import pytest

from node.config import Config, ConfigError, default_config_toml, parse_config


def test_defaults_round_trip_through_the_documented_toml():
    assert parse_config(default_config_toml()) == Config()


def test_the_written_file_sets_nothing_so_a_later_versions_defaults_reach_the_node():
    text = default_config_toml()
    set_lines = [line for line in text.splitlines() if line and not line.startswith(("#", "["))]
    assert set_lines == []
    assert parse_config(text.replace("# max_pages = ", "max_pages = 7 # was ", 1)).node.max_pages == 7
    documented = {line.split(" = ")[0][2:] for line in text.splitlines() if " = " in line}
    assert {"max_pages", "download_delay", "allowed_hosts", "default_loss"} <= documented


def test_a_setting_overrides_its_default():
    config = parse_config("[crawler]\ndownload_delay = 2\n")
    assert config.crawler.download_delay == 2.0


def test_an_unknown_key_is_an_error_that_names_it():
    with pytest.raises(ConfigError, match="download_dealy"):
        parse_config("[crawler]\ndownload_dealy = 2\n")


@pytest.mark.parametrize(
    ("toml", "said"),
    [
        ("[crawler]\ndownload_dealy = 2\n", "unknown setting(s): download_dealy (download_delay?);"),
        ("[crawler]\nmax_pages = 5\n", "unknown setting(s): max_pages (it belongs under [node]);"),
        ("[crawler]\nzzz = 5\n", "unknown setting(s): zzz;"),
        ("[crawlr]\n", "unknown section(s) crawlr ([crawler]?);"),
    ],
)
def test_an_unknown_name_says_what_it_was_probably_meant_to_be(toml, said):
    with pytest.raises(ConfigError) as caught:
        parse_config(toml)
    assert said in str(caught.value)


def test_a_wrongly_typed_value_is_an_error_that_names_the_key():
    with pytest.raises(ConfigError, match="robotstxt_obey"):
        parse_config('[crawler]\nrobotstxt_obey = "yes"\n')


def test_an_unknown_section_is_an_error():
    with pytest.raises(ConfigError, match="crawlr"):
        parse_config("[crawlr]\n")


def test_a_value_error_names_the_file_and_section_once():
    with pytest.raises(ConfigError) as caught:
        parse_config('[crawler]\ndownload_delay = "x"\n', source="/d/config.toml")
    assert str(caught.value) == "/d/config.toml: [crawler] download_delay must be a number, not 'x'"


@pytest.mark.parametrize("after", ["0", "-1.0"])
def test_revisits_need_a_positive_interval(after):
    with pytest.raises(ConfigError, match="revisit_after must be a positive number of seconds"):
        parse_config(f"[crawler]\nrevisit_after = {after}\n")


@pytest.mark.parametrize("share", ["0", "-0.5", "1.5"])
def test_the_unanswered_hosts_share_is_a_share_of_the_slots(share):
    with pytest.raises(ConfigError, match="unanswered_hosts_share must be above 0 and at most 1"):
        parse_config(f"[crawler]\nunanswered_hosts_share = {share}\n")
