"""Saved runs and what reads them: a run folder restored to evaluate or watch (`restore`), saved
policies played head to head (`crossplay`), an episode rendered (`render`), finished folders
compacted (`compact`), and records loaded into a study for reports (`study`).
"""
