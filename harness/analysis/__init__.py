"""`fencepost analyze` (docs/CAMPAIGNS.md): a campaign's runs on Spark through PySpark
(job.py: the Spark job — histories and final logs to Parquet, the per-partition checkers
through applyInPandas; checks.py: the plain functions it runs; output.py: summary.csv,
junit.xml, plots and report.html per configuration)."""
