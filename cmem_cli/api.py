"""placeholder until the API lands"""
