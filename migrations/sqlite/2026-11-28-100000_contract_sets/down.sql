DROP INDEX endpoints_contract_set;
DROP TABLE contract_sets;
